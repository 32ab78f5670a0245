"""The voice channel on the service's side: the calls in the database, each with its
conversation's turns.

The rules (the call as a state machine, the media stream's wire format) are in
``ragcore.voice``; the webhook that answers a call and ``GET /voice/calls`` are in
``ragio.http.voice``.
"""
