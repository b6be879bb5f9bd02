"""Ingest: what a source's walk reaches, extraction of files and mail, segmentation."""
