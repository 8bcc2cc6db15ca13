"""widgets/pe."""
