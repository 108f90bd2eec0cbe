"""The rerank study: policies fitted and validated leave-one-dataset-out, the dynamic cut's calibration,
per-document diversity (issue 12). Run: .venv/bin/python -m bench.rerank --help"""
