"""Handing a bake back to the animation: the baked motion blended into the artist's keys after the bake range.

A setup's bake range may sit inside a longer animation (read.bake_range). The bake keeps the artist's keys
before its first frame and after its last (bake._fill); with Blend Frames N it simulates N frames past the
range's end and, over those frames, moves each baked channel from the simulation to the artist's F-curve:

    value(f) = (1 - w) sim(f) + w keys(f),   w = s^2 (3 - 2 s),   s = (f - end) / N

w and its slope are 0 at the range's end and 1 and 0 at end + N, so the channel leaves the simulation and
joins the keys without a jump or a kink at either end. Only channels the artist keyed after the range's end
blend (keys_after): a channel keyed only before the range would otherwise be pulled back to its last key
(an F-curve holds its last value), so it keeps the simulation. Channels are blended value by value (locations, Euler
angles, quaternion components), so a rotation that turned a full extra turn in the simulation turns it back
during the blend.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def blend_weights(frames: np.ndarray, blend_frames: int) -> np.ndarray:
    """w (S,) at `frames` (ascending; the last is the blend's end): 0 up to the range's end, smoothstep after."""
    end = frames[-1] - blend_frames
    s = np.clip((np.asarray(frames, dtype=float) - end) / blend_frames, 0.0, 1.0)
    return s * s * (3.0 - 2.0 * s)


def blend_into(values: np.ndarray, frames: np.ndarray, keys: Callable[[float], float], blend_frames: int) -> np.ndarray:
    """`values` (S,) at `frames` with the last `blend_frames` frames blended into `keys(frame)` (module docstring)."""
    w = blend_weights(frames, blend_frames)
    out = np.array(values, dtype=float)
    for i in np.nonzero(w > 0.0)[0]:
        out[i] += w[i] * (keys(float(frames[i])) - out[i])
    return out


def keys_after(fcurve, frame: float) -> bool:
    """Whether F-curve `fcurve` (keys in frame order) has a key after `frame`."""
    points = fcurve.keyframe_points
    return len(points) > 0 and points[-1].co[0] > frame
