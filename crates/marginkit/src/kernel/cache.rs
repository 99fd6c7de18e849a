//! LRU cache of kernel columns with a byte budget, partial columns and a stored float chosen by
//! the user: f32 for the SMO's Q matrices (half the memory; the solver reads f32 columns), f64
//! for the robust SVMs' exact margins ([`crate::robust`]).
//!
//! A column `i` stores its first `len` entries, in the solver's *current* (permuted) order; a
//! request for more entries extends it and the caller fills the new tail. The least recently
//! used columns are evicted when the budget is exceeded; the budget always holds at least two
//! full columns, so the two columns of a working pair never evict each other.
//!
//! The LRU list is an index-linked list over *slots*: slot `s` holds the data of column
//! `col_of[s]`; `slot_of[i]` is the slot of column `i`. Following a solver swap of variables
//! `i` and `j` only exchanges the two slot links and swaps entries `i`, `j` inside every cached
//! column (a column holding `i` but not `j` is dropped: its prefix is no longer valid).
//! Every list operation is O(1).
//!
//! A slot's buffer keeps the entries of the columns it held before (`valid` says how many
//! are current), so a reused buffer is never zeroed again: the caller overwrites the requested
//! tail anyway. A buffer that must grow and holds nothing current is replaced rather than
//! reallocated (no copy of stale entries); the new part of a long buffer is zeroed by the
//! pool's threads, so the page faults of its first touch are shared out too.

use rayon::prelude::*;

/// Sentinel index of the LRU list head (slot `n`).
const NONE: u32 = u32::MAX;

/// Deferred row swaps held at most (128 KB): a longer run of swaps (shrinking many variables
/// at once, or restoring the original order at the end of a solve, up to `n` swaps) is applied
/// in batches, so the list stays within [`ColumnCache::overhead_bytes`] instead of growing
/// to 8 bytes per variable while the cache is full.
const MAX_PENDING: usize = 1 << 14;

/// Tails at least this long are zeroed by the pool's threads (see [`zero_extend`]).
const PAR_ZERO: usize = 1 << 14;

/// Extends `col` with zeros to exactly `len` entries of capacity. A long tail is written by
/// the rayon pool in parallel: its pages are fresh, so this first write takes their page
/// faults, which would otherwise all land on the solver's thread (at n = 20,000 filling a
/// 200 MB cache faults in 51,200 pages, about a tenth of a 2-thread fit). On one thread an
/// empty buffer comes zeroed from the allocator, which can skip the write for fresh pages.
fn zero_extend<T: CacheFloat>(col: &mut Vec<T>, len: usize) {
    let add = len - col.len();
    if add >= PAR_ZERO && rayon::current_num_threads() > 1 {
        col.reserve_exact(add);
        col.par_extend(rayon::iter::repeat_n(T::ZERO, add).with_min_len(PAR_ZERO / 2));
    } else if col.capacity() == 0 {
        *col = vec![T::ZERO; len];
    } else {
        col.reserve_exact(add);
        col.resize(len, T::ZERO);
    }
}

/// A float a [`ColumnCache`] can store.
pub trait CacheFloat: Copy + Send + Sync + 'static {
    /// Zero, the value of an entry not yet written.
    const ZERO: Self;
    /// The value rounded to f32 (the precision the SMO solver reads).
    fn to_f32(self) -> f32;
}

impl CacheFloat for f32 {
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
}

impl CacheFloat for f64 {
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
}

/// An LRU cache of partial columns stored as `T` (see the module documentation).
#[derive(Debug)]
pub struct ColumnCache<T = f32> {
    n: usize,
    /// Floats still available under the budget: the budget minus the *capacity* of every
    /// buffer held (columns and the spare), so the memory held never exceeds the budget.
    free_floats: usize,
    /// Data per slot; only the first `valid[s]` entries are current (the rest is stale).
    data: Vec<Vec<T>>,
    /// Current entries per slot.
    valid: Vec<u32>,
    /// Doubly linked LRU list over slots; index `n` is the sentinel (prev = most recent,
    /// next = least recent).
    prev: Vec<u32>,
    next: Vec<u32>,
    /// Whether a slot is in the LRU list (holds data).
    linked: Vec<bool>,
    slot_of: Vec<u32>,
    col_of: Vec<u32>,
    /// One buffer of an evicted column, kept for the next new column (no allocation, no
    /// fresh pages to fault in); counted in the budget.
    spare: Option<Vec<T>>,
    /// Row swaps not yet applied inside the cached columns (`i < j`), applied in order on the
    /// next request: one streaming pass per column instead of one random access per swap.
    pending: Vec<(u32, u32)>,
    hits: u64,
    misses: u64,
}

/// Hit and miss counts of a column cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Requests served entirely from the cache.
    pub hits: u64,
    /// Requests that needed new entries computed.
    pub misses: u64,
}

impl CacheStats {
    /// Fraction of requests served from the cache (0 when there were none).
    pub fn hit_rate(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            0.0
        } else {
            self.hits as f64 / total as f64
        }
    }
}

impl<T: CacheFloat> ColumnCache<T> {
    /// A cache for `n` columns (each up to `n` long) within `budget_bytes` bytes of column data.
    /// The budget is raised to two full columns if smaller.
    pub fn new(n: usize, budget_bytes: u64) -> Self {
        Self::with_len(n, n, budget_bytes)
    }

    /// A cache for `n` columns, each up to `len` long (a column over more rows than there are
    /// columns, such as training then validation rows), within `budget_bytes` bytes of column
    /// data. The budget is raised to two full columns if smaller. When every column is
    /// requested at full length, the cache holds `budget_bytes / (len * size_of::<T>())` columns
    /// (at least two) and evicts the least recently used one beyond that.
    pub fn with_len(n: usize, len: usize, budget_bytes: u64) -> Self {
        let size = std::mem::size_of::<T>() as u64;
        let floats = usize::try_from(budget_bytes / size).unwrap_or(usize::MAX);
        let floats = floats.max(2 * len);
        let sentinel = n as u32;
        Self {
            n,
            free_floats: floats,
            data: (0..n).map(|_| Vec::new()).collect(),
            valid: vec![0; n],
            prev: vec![sentinel; n + 1],
            next: vec![sentinel; n + 1],
            linked: vec![false; n],
            slot_of: (0..n as u32).collect(),
            col_of: (0..n as u32).collect(),
            spare: None,
            pending: Vec::new(),
            hits: 0,
            misses: 0,
        }
    }

    /// Bytes of the per-column bookkeeping of a cache over `n` columns (slot headers, LRU
    /// links, maps), which [`ColumnCache::new`]'s budget (floats only) does not include: the
    /// kernel matrices subtract it from the user's cache size, so that `-m` bounds the whole
    /// cache (at n = 200,000 this is 9 MB), including the deferred-swap list and the flag per
    /// column a flush of it allocates.
    pub fn overhead_bytes(n: usize) -> u64 {
        let per_col = std::mem::size_of::<Vec<T>>() + 5 * std::mem::size_of::<u32>() + 2;
        let pending = MAX_PENDING * std::mem::size_of::<(u32, u32)>();
        (n as u64) * per_col as u64 + (pending + 8 * std::mem::size_of::<u32>()) as u64
    }

    /// Number of columns.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Hit and miss counts so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits,
            misses: self.misses,
        }
    }

    fn unlink(&mut self, s: usize) {
        let (p, q) = (self.prev[s], self.next[s]);
        self.next[p as usize] = q;
        self.prev[q as usize] = p;
        self.linked[s] = false;
    }

    /// Inserts slot `s` as the most recently used.
    fn push_recent(&mut self, s: usize) {
        let head = self.n;
        let last = self.prev[head];
        self.next[last as usize] = s as u32;
        self.prev[s] = last;
        self.next[s] = head as u32;
        self.prev[head] = s as u32;
        self.linked[s] = true;
    }

    /// Unlinks slot `s` and takes its buffer (no valid entry left; capacity and stale
    /// entries kept).
    fn take_slot(&mut self, s: usize) -> Vec<T> {
        self.unlink(s);
        self.valid[s] = 0;
        std::mem::take(&mut self.data[s])
    }

    /// Gives a buffer back: kept as the spare if there is none, else freed.
    fn release(&mut self, v: Vec<T>) {
        if self.spare.is_none() && v.capacity() > 0 {
            self.spare = Some(v);
        } else {
            self.free_floats += v.capacity();
        }
    }

    fn evict_slot(&mut self, s: usize) {
        let v = self.take_slot(s);
        self.release(v);
    }

    /// Whether column `i` holds at least `len` valid entries (no counter or recency change).
    pub fn has(&mut self, i: usize, len: usize) -> bool {
        if !self.pending.is_empty() {
            self.flush();
        }
        self.valid[self.slot_of[i] as usize] as usize >= len
    }

    /// Counts a column computed without going through the cache (a miss that is not stored).
    pub fn count_uncached(&mut self) {
        self.misses += 1;
    }

    /// Makes column `i` hold `len` entries and marks it most recently used. Returns the mutable
    /// column and the number of entries that were already valid: the caller must fill
    /// `[valid..len]`. Column `keep` (if any) is never evicted by this call.
    pub fn request(&mut self, i: usize, len: usize, keep: Option<usize>) -> (&mut [T], usize) {
        if !self.pending.is_empty() {
            self.flush();
        }
        let s = self.slot_of[i] as usize;
        if self.linked[s] {
            self.unlink(s);
        }
        let have = self.valid[s] as usize;
        if have >= len {
            self.hits += 1;
            self.push_recent(s);
            return (&mut self.data[s][..len], len);
        }
        self.misses += 1;
        if self.data[s].capacity() == 0 {
            if let Some(buf) = self.spare.take() {
                self.data[s] = buf;
            }
        }
        let keep_slot = keep.map(|k| self.slot_of[k] as usize);
        // Make room for the growth of this column's buffer.
        while self.free_floats < len.saturating_sub(self.data[s].capacity()) {
            if let Some(buf) = self.spare.take() {
                self.free_floats += buf.capacity();
                continue;
            }
            let victim = self.next[self.n];
            if victim == self.n as u32 || victim == NONE {
                break;
            }
            let v = victim as usize;
            if Some(v) == keep_slot {
                // Move the protected column to the recent end and keep evicting.
                self.unlink(v);
                self.push_recent(v);
                if self.next[self.n] as usize == v {
                    break;
                }
                continue;
            }
            let buf = self.take_slot(v);
            if self.data[s].capacity() == 0 {
                // The new column takes over the evicted column's memory.
                self.data[s] = buf;
            } else {
                self.free_floats += buf.capacity();
            }
        }
        let col = &mut self.data[s];
        let before = col.capacity();
        if before < len && have == 0 {
            // Nothing to keep: a fresh buffer instead of a reallocation copying stale entries.
            *col = Vec::new();
        }
        if col.len() < len {
            // Only the part never written before is zeroed.
            zero_extend(col, len);
        }
        self.free_floats = self
            .free_floats
            .saturating_sub(col.capacity().saturating_sub(before));
        // `len` is at most the column length given at construction, which fits in u32 (the
        // solver refuses more variables, and the robust SVMs' rows are bounded alike).
        self.valid[s] = len as u32;
        self.push_recent(s);
        (&mut self.data[s][..len], have)
    }

    /// The first `len` entries of column `i`, which must have been requested with at least
    /// `len` entries and not evicted or swapped since.
    pub fn get(&self, i: usize, len: usize) -> &[T] {
        let s = self.slot_of[i] as usize;
        debug_assert!(self.valid[s] as usize >= len);
        &self.data[s][..len]
    }

    /// Follows a solver swap of positions `i` and `j`.
    pub fn swap_index(&mut self, i: usize, j: usize) {
        if i == j {
            return;
        }
        let (i, j) = if i < j { (i, j) } else { (j, i) };
        // Column identities: exchange the slots.
        let (si, sj) = (self.slot_of[i], self.slot_of[j]);
        self.slot_of.swap(i, j);
        self.col_of[si as usize] = j as u32;
        self.col_of[sj as usize] = i as u32;
        self.swap_rows(i, j);
    }

    /// Follows a swap of rows `i` and `j` inside every cached column, the columns keeping their
    /// identities (a cache whose columns are named by something else than a row position, such
    /// as the global samples of a problem split across processes).
    pub fn swap_rows(&mut self, i: usize, j: usize) {
        if i == j {
            return;
        }
        let (i, j) = if i < j { (i, j) } else { (j, i) };
        // Row entries inside the cached columns: deferred (in bounded batches).
        if self.pending.len() == MAX_PENDING {
            self.flush();
        }
        if self.pending.capacity() == 0 {
            self.pending.reserve_exact(MAX_PENDING);
        }
        self.pending.push((i as u32, j as u32));
    }

    /// Applies the pending row swaps to every cached column: the columns in parallel (each
    /// one is touched by one task only), then the evictions of the columns whose prefix broke,
    /// in LRU order as a serial pass would do them.
    fn flush(&mut self) {
        let pending = &self.pending;
        let broken: Vec<bool> = self
            .data
            .par_iter_mut()
            .zip(self.valid.par_iter())
            .map(|(col, &len)| {
                let len = len as usize;
                if len == 0 {
                    return false;
                }
                for &(i, j) in pending {
                    let (i, j) = (i as usize, j as usize);
                    if len > j {
                        col.swap(i, j);
                    } else if len > i {
                        // Entry j is missing, so the prefix would be wrong after the swap.
                        return true;
                    }
                }
                false
            })
            .collect();
        let mut s = self.next[self.n];
        while s != self.n as u32 {
            let su = s as usize;
            let nxt = self.next[su];
            if broken[su] {
                self.evict_slot(su);
            }
            s = nxt;
        }
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(c: &mut ColumnCache, i: usize, len: usize, val: impl Fn(usize) -> f32) {
        let (col, valid) = c.request(i, len, None);
        for (k, v) in col.iter_mut().enumerate().skip(valid) {
            *v = val(k);
        }
    }

    #[test]
    fn lru_eviction_and_partial_extension() {
        // Budget: exactly 2 full columns of 4.
        let mut c = ColumnCache::new(4, 32);
        fill(&mut c, 0, 4, |k| k as f32);
        fill(&mut c, 1, 4, |k| 10.0 + k as f32);
        assert_eq!(c.stats().misses, 2);
        let (_, valid) = c.request(0, 4, None);
        assert_eq!(valid, 4);
        assert_eq!(c.stats().hits, 1);
        // Column 2 evicts the least recent (1).
        fill(&mut c, 2, 4, |k| 20.0 + k as f32);
        assert_eq!(c.get(0, 4), &[0.0, 1.0, 2.0, 3.0]);
        let (_, valid) = c.request(1, 2, Some(2));
        assert_eq!(valid, 0);
        // Partial then extension.
        let mut c = ColumnCache::new(5, 1000);
        fill(&mut c, 3, 2, |k| k as f32);
        let (col, valid) = c.request(3, 5, None);
        assert_eq!(valid, 2);
        assert_eq!(col.len(), 5);
    }

    #[test]
    fn swap_follows_permutation() {
        let mut c = ColumnCache::new(4, 1000);
        fill(&mut c, 0, 4, |k| k as f32);
        fill(&mut c, 1, 2, |k| 10.0 + k as f32);
        c.swap_index(0, 3);
        c.swap_index(1, 2);
        c.swap_index(1, 2);
        // Column 0's data is now column 3's, with entries 0 and 3 swapped.
        let _ = c.request(2, 0, None);
        assert_eq!(c.get(3, 4), &[3.0, 1.0, 2.0, 0.0]);
        // Column 1 had length 2: it holds entry 0 but not 3, so it is dropped.
        let (_, valid) = c.request(1, 2, None);
        assert_eq!(valid, 0);
        let (_, valid) = c.request(0, 1, None);
        assert_eq!(valid, 0);
    }
    /// Long columns grown on a 2-thread pool (the parallel zeroing): the valid prefix is
    /// kept, the new tail is zero, and a column that holds nothing current is replaced rather
    /// than copied when it takes over a shorter evicted buffer.
    #[test]
    fn long_columns_grow_in_parallel_and_keep_their_prefix() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| {
            let n = 3 * PAR_ZERO;
            // Room for two full columns only.
            let mut c = ColumnCache::new(n, (8 * n) as u64);
            fill(&mut c, 0, PAR_ZERO / 2, |k| k as f32 + 1.0);
            let (col, valid) = c.request(0, n, None);
            assert_eq!((valid, col.len()), (PAR_ZERO / 2, n));
            assert!(col[..valid]
                .iter()
                .enumerate()
                .all(|(k, &v)| v == k as f32 + 1.0));
            assert!(col[valid..].iter().all(|&v| v == 0.0));
            fill(&mut c, 0, n, |k| k as f32 + 1.0);
            fill(&mut c, 1, PAR_ZERO, |_| 7.0);
            // Column 2 evicts column 0 (least recent) and must grow column 1's spare room.
            let (col, valid) = c.request(2, n, Some(1));
            assert_eq!((valid, col.len()), (0, n));
            col.fill(3.0);
            assert_eq!(c.get(1, PAR_ZERO), &vec![7.0; PAR_ZERO][..]);
            assert_eq!(c.get(2, n), &vec![3.0; n][..]);
        });
    }

    /// f64 columns longer than the column count, always requested whole (the robust SVMs'
    /// use): the hit/miss sequence and the evictions are those of a plain LRU list of
    /// `budget / (8 len)` columns, simulated here independently, and every column read back
    /// holds the values written when it was last filled.
    #[test]
    fn f64_full_columns_follow_a_plain_lru() {
        let (n, len) = (9usize, 13usize);
        for cols in [2usize, 3, 5, 9] {
            let mut c: ColumnCache<f64> = ColumnCache::with_len(n, len, (8 * len * cols) as u64);
            // Oracle: the resident columns, most recent last.
            let mut lru: Vec<usize> = Vec::new();
            let (mut hits, mut misses) = (0u64, 0u64);
            let mut state = 7u64 + cols as u64;
            for step in 0..400 {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1442695040888963407);
                let j = (state >> 33) as usize % n;
                let want_hit = if let Some(p) = lru.iter().position(|&v| v == j) {
                    lru.remove(p);
                    true
                } else {
                    if lru.len() == cols {
                        lru.remove(0);
                    }
                    false
                };
                lru.push(j);
                if want_hit {
                    hits += 1
                } else {
                    misses += 1
                }
                let (col, valid) = c.request(j, len, None);
                assert_eq!(
                    valid == len,
                    want_hit,
                    "step {step}, column {j}, {cols} slots"
                );
                if valid < len {
                    assert_eq!(valid, 0);
                    for (k, v) in col.iter_mut().enumerate() {
                        *v = (j * 100 + k) as f64 + 0.25;
                    }
                }
                assert!(c
                    .get(j, len)
                    .iter()
                    .enumerate()
                    .all(|(k, &v)| v == (j * 100 + k) as f64 + 0.25));
                assert_eq!(c.stats(), CacheStats { hits, misses });
            }
        }
    }

    /// More swaps than one batch holds (a long shrinking step, or the restore at the end of a
    /// solve): applied in batches, the cached columns still follow the whole permutation and
    /// the deferred list never outgrows its bound.
    #[test]
    fn long_swap_runs_are_applied_in_bounded_batches() {
        let n = 64;
        let mut c = ColumnCache::new(n, 1 << 20);
        for i in 0..n {
            fill(&mut c, i, n, |k| (1000 * i + k) as f32);
        }
        // perm[p] = original index at position p, swapped like the solver does.
        let mut perm: Vec<usize> = (0..n).collect();
        let mut state = 12345u64;
        for _ in 0..3 * MAX_PENDING + 7 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let i = (state >> 33) as usize % n;
            let j = (state >> 17) as usize % n;
            c.swap_index(i, j);
            perm.swap(i, j);
            assert!(c.pending.len() <= MAX_PENDING);
        }
        for p in 0..n {
            let (col, valid) = c.request(p, n, None);
            assert_eq!(valid, n, "column {p} was dropped");
            let want: Vec<f32> = (0..n).map(|r| (1000 * perm[p] + perm[r]) as f32).collect();
            assert_eq!(col, &want[..], "column {p}");
        }
    }
}
