"""ragcore: the pure core of ragchat.

Every rule of the service lives here as plain functions, frozen attrs classes
and generator pipelines that yield effect requests (see ``ragcore.effects``).
Nothing here does I/O, awaits, reads the clock or the environment: the runners
in ``ragio`` and ``voiceio`` do that and feed the results back in.
"""

__version__ = "0.7.5"
