//! Fuzzes the in-memory LIBSVM/svmlight reader (plain and gzip input) and, when a data set is
//! accepted, checks that writing it and reading it back gives the same data set.
#![no_main]

use libfuzzer_sys::fuzz_target;
use marginkit::data::libsvm_fmt::{
    read_libsvm_bytes, write_libsvm, Indexing, ReadOptions, Storage,
};

fuzz_target!(|data: &[u8]| {
    // The first byte picks the options so one corpus covers all reader modes.
    let (mode, input) = match data.split_first() {
        Some((m, rest)) => (*m, rest),
        None => (0, data),
    };
    let opts = ReadOptions {
        indexing: if mode & 1 == 0 {
            Indexing::OneBased
        } else {
            Indexing::Precomputed
        },
        storage: if mode & 2 == 0 {
            Storage::default()
        } else {
            Storage::Sparse
        },
        max_line_len: if mode & 4 == 0 { 1 << 20 } else { 64 },
        max_feature_index: if mode & 8 == 0 { 1 << 20 } else { 100 },
        ..ReadOptions::default()
    };
    if let Ok(ds) = read_libsvm_bytes(input, &opts) {
        if opts.indexing == Indexing::OneBased && opts.storage == Storage::Sparse {
            let mut out = Vec::new();
            write_libsvm(&mut out, &ds).expect("writing an accepted data set");
            let back = read_libsvm_bytes(&out, &opts).expect("re-reading written data");
            assert_eq!(back, ds);
        }
    }
});
