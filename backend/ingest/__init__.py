"""Ingestion: loaders (files to text), chunking and metadata."""
