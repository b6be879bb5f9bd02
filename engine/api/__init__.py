"""The Engine facade the window and the command line code against."""
