"""voiceio: the voice channel (a WebSocket server for the telephony media stream).

It answers callers through the same ragcore pipeline as text chat. Arrives in a
later version; the package exists so the layering contract covers it.
"""
