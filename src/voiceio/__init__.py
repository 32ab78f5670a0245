"""voiceio: the voice channel, and the ``ragchat`` entry point.

A WebSocket server for the telephony provider's media streams (``voiceio.server``), each
call run around the call's state machine (``voiceio.call``, ``ragcore.voice.call``), the
speech provider's clients (``voiceio.speech``) and the voice-activity detector
(``voiceio.vad``). It answers callers through the same ragcore pipeline as text chat.
``voiceio.cli`` is the ``ragchat`` command: on the embedded database ``serve`` runs the
voice server beside the HTTP API, and ``voice`` runs it alone on DATABASE_URL
(docs/architecture.md).
"""
