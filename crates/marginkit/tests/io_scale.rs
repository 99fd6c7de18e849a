//! svm-scale compatible scaling: fit, apply (dense and sparse), the parameter file format
//! (byte-exact `%.16g` output and an exact round-trip variant), restore semantics, hostile files.

use std::path::PathBuf;

use marginkit::data::libsvm_fmt::{read_libsvm_bytes, read_libsvm_path, ReadOptions, Storage};
use marginkit::data::scale::{ScaleParams, ScaleReadOptions, DEFAULT_PARAMS_MAX_LINE_LEN};
use marginkit::{
    DataError, Dataset, DenseMatrix, Features, FitError, IoError, ParamError, ParseError,
    ParseErrorKind,
};

/// A hostile input, the expected 1-based line and column, and a check of the error kind.
type Case = (&'static [u8], usize, usize, fn(&ParseErrorKind) -> bool);

const TRAIN: &[u8] = b"1 1:2 3:5 4:0.30000000000000004\n-1 1:4 2:1 4:-2.5e-7\n2 1:6 3:0.1\n";

fn sparse(bytes: &[u8]) -> Dataset {
    let o = ReadOptions {
        storage: Storage::Sparse,
        ..ReadOptions::default()
    };
    read_libsvm_bytes(bytes, &o).unwrap()
}

fn dense(ds: &Dataset) -> Dataset {
    Dataset::new(
        ds.x.clone().densify_if(0.0, usize::MAX),
        ds.y.clone(),
        ds.weights.clone(),
    )
    .unwrap()
}

fn text(p: &ScaleParams, exact: bool) -> String {
    let mut out = Vec::new();
    if exact {
        p.write_exact(&mut out).unwrap();
    } else {
        p.write(&mut out).unwrap();
    }
    String::from_utf8(out).unwrap()
}

#[test]
fn fit_counts_missing_sparse_entries_as_zero_and_writes_svm_scale_format() {
    let ds = sparse(TRAIN);
    let p = ScaleParams::fit(&ds, -1.0, 1.0, Some((0.0, 1.0))).unwrap();
    // %.16g as svm-scale -s prints: 0.30000000000000004 -> 0.3, -2.5e-7 -> -2.5e-07.
    assert_eq!(
        text(&p, false),
        "y\n0 1\n-1 2\nx\n-1 1\n1 2 6\n2 0 1\n3 0 5\n4 -2.5e-07 0.3\n"
    );
    assert_eq!(
        text(&p, true),
        "y\n0 1\n-1 2\nx\n-1 1\n1 2 6\n2 0 1\n3 0 5\n4 -2.5e-7 0.30000000000000004\n"
    );
    // Dense storage gives the same parameters.
    assert_eq!(
        ScaleParams::fit(&dense(&ds), -1.0, 1.0, Some((0.0, 1.0))).unwrap(),
        p
    );
}

#[test]
fn apply_maps_end_points_exactly_and_keeps_zeros_out() {
    let ds = sparse(TRAIN);
    let p = ScaleParams::fit(&ds, -1.0, 1.0, Some((0.0, 1.0))).unwrap();
    let s = p.apply(&ds).unwrap();
    let Features::Sparse(m) = &s.x else {
        panic!("sparse in, sparse out")
    };
    // row 0: every column at an end point
    assert_eq!(
        m.row(0),
        (&[0u32, 1, 2, 3][..], &[-1.0, -1.0, 1.0, 1.0][..])
    );
    // row 1: column 0 (4 in [2,6]) scales to exactly 0 and is not stored
    assert_eq!(m.row(1), (&[1u32, 2, 3][..], &[1.0, -1.0, -1.0][..]));
    let (idx, val) = m.row(2);
    assert_eq!(idx, &[0u32, 1, 2, 3]);
    assert_eq!(val[0], 1.0);
    assert_eq!(val[1], -1.0);
    assert!((val[2] - (-0.96)).abs() < 1e-15);
    let z = -1.0 + 2.0 * 2.5e-7 / (0.30000000000000004 + 2.5e-7);
    assert_eq!(val[3], z);
    assert_eq!(s.y, vec![2.0 / 3.0, 0.0, 1.0]);
    // Dense input gives the same values in dense storage.
    let d = p.apply(&dense(&ds)).unwrap();
    assert!(matches!(d.x, Features::Dense(_)));
    for i in 0..3 {
        for k in 0..4 {
            assert_eq!(d.x.row(i).get(k), s.x.row(i).get(k));
        }
    }
}

#[test]
fn constant_features_are_left_out() {
    let ds = sparse(b"1 1:3 2:1\n-1 1:3 2:2\n1 1:3 2:5 3:0\n");
    let p = ScaleParams::fit(&ds, 0.0, 1.0, None).unwrap();
    assert_eq!(p.ranges().len(), 1);
    assert_eq!(p.ranges()[0].column, 1);
    assert_eq!(text(&p, false), "x\n0 1\n2 1 5\n");
    let s = p.apply(&ds).unwrap();
    assert_eq!(s.n_features(), 3);
    for i in 0..3 {
        assert_eq!(s.x.row(i).get(0), 0.0);
    }
    assert_eq!(s.x.row(2).get(1), 1.0);
    assert_eq!(s.y, ds.y, "no y scaling");
}

#[test]
fn heart_scale_is_a_fixed_point() {
    // heart_scale was made by svm-scale to [-1, 1]: refitting finds [-1, 1] ranges and scaling
    // reproduces the file (to rounding of lower + (upper-lower)*(v-min)/(max-min)).
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/heart_scale");
    for storage in [Storage::Sparse, Storage::default()] {
        let o = ReadOptions {
            storage,
            ..ReadOptions::default()
        };
        let ds = read_libsvm_path(&path, &o).unwrap();
        let p = ScaleParams::fit(&ds, -1.0, 1.0, Some((-1.0, 1.0))).unwrap();
        assert_eq!(p.ranges().len(), 13);
        for r in p.ranges() {
            assert_eq!((r.min, r.max), (-1.0, 1.0), "column {}", r.column);
        }
        let s = p.apply(&ds).unwrap();
        assert_eq!(s.y, ds.y);
        for i in 0..ds.len() {
            for k in 0..13 {
                let (a, b) = (ds.x.row(i).get(k), s.x.row(i).get(k));
                assert!((a - b).abs() <= 1e-15, "row {i} col {k}: {a} vs {b}");
            }
        }
    }
}

#[test]
fn params_round_trip_through_text() {
    let ds = sparse(TRAIN);
    for y in [None, Some((-10.0, 10.0))] {
        let p = ScaleParams::fit(&ds, 0.0, 1.0, y).unwrap();
        let back = ScaleParams::read(text(&p, true).as_bytes()).unwrap();
        assert_eq!(back, p);
        // %.16g loses at most the 17th digit.
        let back16 = ScaleParams::read(text(&p, false).as_bytes()).unwrap();
        for (a, b) in back16.ranges().iter().zip(p.ranges()) {
            assert_eq!(a.column, b.column);
            assert!((a.min - b.min).abs() <= 1e-15 * b.min.abs().max(1e-300));
            assert!((a.max - b.max).abs() <= 1e-15 * b.max.abs());
        }
    }
}

#[test]
fn restored_params_scale_other_data_like_svm_scale_r() {
    // svm-scale -r style file, written by hand with blank lines and CRLF.
    let params = ScaleParams::read(&b"x\r\n0 1\r\n\r\n1 0 10\r\n3 -5 5\r\n"[..]).unwrap();
    assert_eq!(params.ranges().len(), 2);
    assert!(params.y_scale().is_none());
    // Test data wider than the parameters: column 1 and 3.. have no range and become 0.
    let test = sparse(b"7 1:5 2:9 3:5 5:1\n8 1:20\n");
    let s = params.apply(&test).unwrap();
    assert_eq!(s.n_features(), 5);
    assert_eq!(s.y, vec![7.0, 8.0]);
    assert_eq!(
        (s.x.row(0).get(0), s.x.row(0).get(1), s.x.row(0).get(2)),
        (0.5, 0.0, 1.0)
    );
    assert_eq!(s.x.row(0).get(4), 0.0);
    // Out-of-range values extrapolate, as in svm-scale; the missing column 3 maps 0 -> 0.5.
    assert_eq!((s.x.row(1).get(0), s.x.row(1).get(2)), (2.0, 0.5));
    // Test data narrower than the parameters: the output still has the parameters' columns.
    let narrow = sparse(b"1 1:10\n");
    let s = params.apply(&narrow).unwrap();
    assert_eq!(s.n_features(), 3);
    assert_eq!(s.x.row(0).get(2), 0.5);
    // Weights travel along.
    let x = Features::Dense(DenseMatrix::new(1, 1, vec![5.0]).unwrap());
    let w = Dataset::new(x, vec![1.0], Some(vec![2.5])).unwrap();
    assert_eq!(params.apply(&w).unwrap().weights, Some(vec![2.5]));
}

#[test]
fn apply_reports_overflow_instead_of_producing_inf() {
    let p = ScaleParams::read(&b"x\n-1 1\n1 0 1e-300\n"[..]).unwrap();
    let ds = sparse(b"1 1:1e300\n");
    assert_eq!(
        p.apply(&ds),
        Err(DataError::NonFinite {
            what: "feature",
            row: 0
        })
    );
    assert_eq!(
        p.apply(&dense(&ds)),
        Err(DataError::NonFinite {
            what: "feature",
            row: 0
        })
    );
    // y scaling fitted on a single label cannot map another one.
    let one = sparse(b"1 1:1\n1 1:2\n");
    let p = ScaleParams::fit(&one, -1.0, 1.0, Some((0.0, 1.0))).unwrap();
    assert_eq!(p.apply(&one).unwrap().y, vec![0.0, 0.0]);
    let other = sparse(b"1 1:1\n2 1:2\n");
    assert_eq!(
        p.apply(&other),
        Err(DataError::NonFinite {
            what: "label",
            row: 1
        })
    );
}

#[test]
fn fit_rejects_bad_limits_and_empty_data() {
    let ds = sparse(TRAIN);
    for (l, u) in [
        (1.0, 1.0),
        (1.0, 0.0),
        (f64::NAN, 1.0),
        (0.0, f64::INFINITY),
    ] {
        assert!(matches!(
            ScaleParams::fit(&ds, l, u, None),
            Err(FitError::Param(ParamError::OutOfRange { .. }))
        ));
        assert!(matches!(
            ScaleParams::fit(&ds, -1.0, 1.0, Some((l, u))),
            Err(FitError::Param(ParamError::OutOfRange { .. }))
        ));
    }
    let empty = Dataset::new(
        Features::Dense(DenseMatrix::new(0, 2, vec![]).unwrap()),
        vec![],
        None,
    )
    .unwrap();
    assert!(matches!(
        ScaleParams::fit(&empty, -1.0, 1.0, None),
        Err(FitError::Data(DataError::Empty))
    ));
}

#[test]
fn hostile_parameter_files() {
    use ParseErrorKind as K;
    let cases: Vec<Case> = vec![
        (b"", 1, 1, |k| *k == K::Empty),
        (b"\n\n", 3, 1, |k| *k == K::Empty),
        (b"z\n", 1, 1, |k| matches!(k, K::Expected { .. })),
        (b"x y\n", 1, 1, |k| matches!(k, K::Expected { .. })),
        (b"x\n1\n", 2, 2, |k| matches!(k, K::Expected { .. })),
        (b"x\n1 0\n", 2, 3, |k| matches!(k, K::Expected { .. })),
        (b"x\n-1 a\n", 2, 4, |k| matches!(k, K::Expected { .. })),
        (b"x\nnan 1\n", 2, 1, |k| {
            *k == K::NonFinite { what: "lower" }
        }),
        (b"x\n-1 1\n0 1 2\n", 3, 1, |k| {
            *k == K::IndexTooSmall { index: 0, min: 1 }
        }),
        (b"x\n-1 1\n2 0 1\n2 0 1\n", 4, 1, |k| {
            *k == K::NonIncreasingIndex {
                index: 2,
                previous: 2,
            }
        }),
        (b"x\n-1 1\n1 2 1\n", 3, 5, |k| {
            matches!(k, K::Expected { .. })
        }),
        (b"x\n-1 1\n1 inf 1\n", 3, 3, |k| {
            *k == K::NonFinite { what: "min" }
        }),
        (b"x\n-1 1\n1 0 1 5\n", 3, 7, |k| {
            matches!(k, K::Expected { .. })
        }),
        (b"x\n-1 1\n1 0\n", 3, 4, |k| matches!(k, K::Expected { .. })),
        (b"x\n-1 1\n-1 0 1\n", 3, 1, |k| {
            matches!(k, K::Expected { .. })
        }),
        (b"x\n-1 1\n2147483648 0 1\n", 3, 1, |k| {
            matches!(
                k,
                K::Limit {
                    what: "feature index",
                    ..
                }
            )
        }),
        (b"x\n-1 1\n99999999999999999999999 0 1\n", 3, 1, |k| {
            matches!(k, K::Limit { .. })
        }),
        (b"x\n", 2, 1, |k| matches!(k, K::Expected { .. })),
        (b"y\n0 1\n", 3, 1, |k| matches!(k, K::Expected { .. })),
        (b"y\n1 0\n", 2, 3, |k| matches!(k, K::Expected { .. })),
        (b"y\n0 1\n2 1\n", 3, 3, |k| matches!(k, K::Expected { .. })),
        (b"y\n0 1\n0 1\nz\n", 4, 1, |k| {
            matches!(k, K::Expected { .. })
        }),
        (b"y\n0 1\n0 1\nx\n0 1\nx\n", 6, 2, |k| {
            matches!(k, K::Expected { .. })
        }),
    ];
    for (input, line, column, check) in cases {
        let shown = String::from_utf8_lossy(input).into_owned();
        let e = match ScaleParams::read(input) {
            Err(IoError::Parse(p)) => p,
            other => panic!("{shown:?}: expected a parse error, got {other:?}"),
        };
        assert_eq!((e.line, e.column), (line, column), "{shown:?}: {e:?}");
        assert!(check(&e.kind), "{shown:?}: {e:?}");
    }
}

#[test]
fn parameter_reader_limits() {
    assert_eq!(DEFAULT_PARAMS_MAX_LINE_LEN, 1 << 16);
    let o = ScaleReadOptions {
        max_line_len: 8,
        max_feature_index: 5,
    };
    assert!(ScaleParams::read_with(&b"x\n-1 1\n5 0 1\n"[..], &o).is_ok());
    let e = ScaleParams::read_with(&b"x\n-1 1\n6 0 1\n"[..], &o).unwrap_err();
    assert!(matches!(
        e,
        IoError::Parse(ParseError {
            line: 3,
            column: 1,
            kind: ParseErrorKind::Limit {
                what: "feature index",
                limit: 5
            }
        })
    ));
    let e = ScaleParams::read_with(&b"x\n-1 1\n1 0 1.000000\n"[..], &o).unwrap_err();
    assert!(matches!(
        e,
        IoError::Parse(ParseError {
            line: 3,
            column: 9,
            kind: ParseErrorKind::Limit { limit: 8, .. }
        })
    ));
}
