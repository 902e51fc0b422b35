"""graindem.fem"""
