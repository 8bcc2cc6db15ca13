"""widgets/common."""
