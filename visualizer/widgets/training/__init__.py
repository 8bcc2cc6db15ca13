"""widgets/training."""
