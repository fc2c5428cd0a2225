PRESETS: dict = {}
