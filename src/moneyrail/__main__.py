from moneyrail.entry import main

main()
