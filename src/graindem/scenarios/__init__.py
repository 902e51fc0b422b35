"""graindem.scenarios"""
