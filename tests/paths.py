"""Where the project's files are, for tests in any folder: the checkout, and the example snapshot it ships."""

from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
