"""Loading speed of a local parquet copy: 10,000 MMLU-Pro-schema rows through the corpus
loader (read, check, convert to items), against pyarrow reading the same file in the same run.

    python bench/load_speed.py [--rows 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mmconvert.corpora import LoadReport, LoadRequest, resolve  # noqa: E402

SAMPLE = Path("/work/shared/data/mmlu-pro/data/test-sample-00000-of-00001.parquet")


def make_table(rows: int, path: Path) -> None:
    """``rows`` rows in MMLU-Pro's schema: the shipped test fixture's rows repeated with new
    question ids (the real sample when present, else the test fixture)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = SAMPLE if SAMPLE.exists() else (
        ROOT / "tests" / "fixtures" / "mmlu-pro" / "data" / "test-00000-of-00001.parquet")
    table = pq.read_table(source)
    copies = -(-rows // table.num_rows)
    big = pa.concat_tables([table] * copies).slice(0, rows)
    ids = pa.array(range(rows), type=big.schema.field("question_id").type)
    big = big.set_column(big.schema.get_field_index("question_id"), "question_id", ids)
    pq.write_table(big, path)


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "test-00000-of-00001.parquet"
        make_table(args.rows, path)
        corpus = resolve("mmlu-pro")

        def ours():
            items = list(corpus.load(LoadRequest(source=path), LoadReport()))
            assert len(items) == args.rows

        baseline = best_of(args.repeat, lambda: pq.read_table(path).to_pylist())
        seconds = best_of(args.repeat, ours)
    print(f"mmlu-pro loader: {args.rows} rows in {seconds:.3f} s "
          f"({args.rows / seconds:,.0f} rows/s)")
    print(f"baseline pyarrow read_table().to_pylist(): {baseline:.3f} s "
          f"(loader overhead x{seconds / baseline:.1f})")


if __name__ == "__main__":
    main()
