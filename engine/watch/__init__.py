"""File events to index changes: the watcher calls back, it never imports the facade."""
