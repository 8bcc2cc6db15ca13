"""widgets/pe_lab."""
