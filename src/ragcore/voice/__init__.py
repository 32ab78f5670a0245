"""The voice channel's rules: the media stream's wire format, the call as a state machine,
turn taking, the echo rule, and what is said aloud. voiceio moves the bytes."""
