"""Data files shipped with Attention Playground (installed as the package `playground_resources`)."""
