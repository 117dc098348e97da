from moneyrail.cli import main

main()
