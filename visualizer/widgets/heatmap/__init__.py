"""widgets/heatmap."""
