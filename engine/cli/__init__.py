"""The ``sparcdesk`` command line."""
