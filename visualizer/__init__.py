"""Attention Playground's Qt front end. Importing this package loads neither Qt nor torch."""
