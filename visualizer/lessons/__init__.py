"""Guided lessons: lesson files (resources/lessons/*.toml) checked on load, and the runner that plays them."""
