"""graindem.io"""
