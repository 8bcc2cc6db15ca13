"""The length lab tab: exact match vs source length for two models, and one source's cross-attention."""
