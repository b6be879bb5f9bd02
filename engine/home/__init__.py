"""The data folder: layout, logs, the writer lock, disk space, self-repair."""
