"""Build ``tracks.npz`` (real flight trajectories, resampled) from the ``traffic`` wheel.

    python -m workloads.aircraft.make_tracks [--wheel path/to/traffic-*.whl]

Without ``--wheel`` the wheel is downloaded with ``pip download --no-deps traffic``. The
samples are read straight from the wheel (a zip): nothing is installed. See PROVENANCE.md.

Each kept flight is one ``(icao24, callsign)`` pair from the ``quickstart`` collection
(ADS-B, 7 October 2021) with at least 200 airborne fixes spanning 10+ minutes. Positions
are projected to a local east/north plane around the flight's first fix (equirectangular,
km), resampled to ``POINTS`` fixes evenly spaced in time, and shifted to start at (0, 0).
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import math
import subprocess
import sys
import tempfile
import zipfile
from collections import defaultdict
from pathlib import Path

import numpy as np

SAMPLE = "traffic/data/samples/collections/quickstart.json.gz"
POINTS = 64
KEEP = 48
EARTH_RADIUS_KM = 6371.0
OUT = Path(__file__).with_name("tracks.npz")


def find_wheel(path: str | None) -> Path:
    if path:
        return Path(path)
    tmp = tempfile.mkdtemp(prefix="seer-traffic-")
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "traffic", "-d", tmp],
                   check=True)
    return Path(glob.glob(f"{tmp}/traffic-*.whl")[0])


def load_flights(wheel: Path) -> dict[tuple[str, str], list[dict]]:
    with zipfile.ZipFile(wheel) as z:
        records = json.loads(gzip.decompress(z.read(SAMPLE)))
    flights: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in records:
        if r.get("onground") or r.get("latitude") is None or r.get("longitude") is None:
            continue
        flights[(r["icao24"], r.get("callsign") or "")].append(r)
    return flights


def to_track(fixes: list[dict]) -> np.ndarray | None:
    fixes.sort(key=lambda r: r["timestamp"])
    t = np.array([r["timestamp"] for r in fixes], np.float64) / 1000.0
    lat = np.radians([r["latitude"] for r in fixes])
    lon = np.radians([r["longitude"] for r in fixes])
    if len(t) < 200 or t[-1] - t[0] < 600:
        return None
    east = (lon - lon[0]) * math.cos(lat[0]) * EARTH_RADIUS_KM
    north = (lat - lat[0]) * EARTH_RADIUS_KM
    grid = np.linspace(t[0], t[-1], POINTS)
    track = np.stack([np.interp(grid, t, east), np.interp(grid, t, north)], axis=1)
    if np.hypot(*(track[-1] - track[0])) < 5.0:  # keep flights that go somewhere
        return None
    return track


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", help="a downloaded traffic-*.whl")
    args = parser.parse_args()
    wheel = find_wheel(args.wheel)
    flights = load_flights(wheel)
    kept, names = [], []
    for key in sorted(flights):
        track = to_track(flights[key])
        if track is not None:
            kept.append(track)
            names.append(f"{key[0]}/{key[1].strip()}")
        if len(kept) == KEEP:
            break
    tracks = np.stack(kept).astype(np.float32)
    np.savez_compressed(OUT, tracks=tracks, names=np.array(names), source=np.array(
        f"{wheel.name}:{SAMPLE}"))
    print(f"wrote {OUT}: {tracks.shape[0]} tracks x {POINTS} points from {wheel.name}")


if __name__ == "__main__":
    main()
