"""``python -m bench.product``: the product-level benchmark (bench/product/__init__.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.product.cli import main  # noqa: E402

main()
