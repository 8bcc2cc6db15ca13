"""widgets/playground."""
