"""Small value types shared by every domain: ids, money, time, cursors."""
