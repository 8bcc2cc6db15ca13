"""widgets/trainer."""
