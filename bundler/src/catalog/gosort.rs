//! Go's `sort.Slice`, step for step: pattern-defeating quicksort (Go 1.19 and later).
//!
//! `sort.Slice` is not stable, but it is deterministic: equal elements end in an order that
//! depends only on the input order and the algorithm's comparisons and swaps. opm sorts a
//! bundle's relatedImages by image with it, so to print the same bytes olmpack must leave
//! equal images (same image, different names) exactly where Go leaves them. This module
//! performs the same comparisons and swaps as Go's implementation: insertion sort for runs of
//! at most 12, median-of-three (ninther from 50) pivots with a sortedness hint, a partial
//! insertion sort for likely sorted runs, partitioning around equal pivots, xorshift pattern
//! breaking after an unbalanced partition, and heapsort once `bits.Len(n)` bad partitions have
//! been made. `tests/catalog_render.rs` checks it against the real opm.

/// Sorts `items` as Go's `sort.Slice(items, less)` does (same final order, equal elements
/// included).
pub fn sort_slice<T>(items: &mut [T], less: impl FnMut(&T, &T) -> bool) {
    let n = items.len();
    let mut s = Sorter { items, less };
    s.pdqsort(0, n, bit_len(n));
}

/// Go's `bits.Len`: the number of bits needed to represent `n`.
fn bit_len(n: usize) -> usize {
    (usize::BITS - n.leading_zeros()) as usize
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Hint {
    Unknown,
    Increasing,
    Decreasing,
}

struct Sorter<'a, T, F> {
    items: &'a mut [T],
    less: F,
}

impl<T, F: FnMut(&T, &T) -> bool> Sorter<'_, T, F> {
    fn less(&mut self, i: usize, j: usize) -> bool {
        (self.less)(&self.items[i], &self.items[j])
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.items.swap(i, j);
    }

    fn insertion_sort(&mut self, a: usize, b: usize) {
        for i in a + 1..b {
            let mut j = i;
            while j > a && self.less(j, j - 1) {
                self.swap(j, j - 1);
                j -= 1;
            }
        }
    }

    fn sift_down(&mut self, lo: usize, hi: usize, first: usize) {
        let mut root = lo;
        loop {
            let mut child = 2 * root + 1;
            if child >= hi {
                return;
            }
            if child + 1 < hi && self.less(first + child, first + child + 1) {
                child += 1;
            }
            if !self.less(first + root, first + child) {
                return;
            }
            self.swap(first + root, first + child);
            root = child;
        }
    }

    fn heap_sort(&mut self, a: usize, b: usize) {
        let len = b - a;
        for i in (0..=len.saturating_sub(1) / 2).rev() {
            self.sift_down(i, len, a);
        }
        for i in (0..len).rev() {
            self.swap(a, a + i);
            self.sift_down(0, i, a);
        }
    }

    fn pdqsort(&mut self, mut a: usize, mut b: usize, mut limit: usize) {
        const MAX_INSERTION: usize = 12;
        let mut was_balanced = true;
        let mut was_partitioned = true;
        loop {
            let len = b - a;
            if len <= MAX_INSERTION {
                self.insertion_sort(a, b);
                return;
            }
            if limit == 0 {
                self.heap_sort(a, b);
                return;
            }
            if !was_balanced {
                self.break_patterns(a, b);
                limit -= 1;
            }
            let (mut pivot, mut hint) = self.choose_pivot(a, b);
            if hint == Hint::Decreasing {
                self.reverse(a, b);
                pivot = (b - 1) - (pivot - a);
                hint = Hint::Increasing;
            }
            if was_balanced
                && was_partitioned
                && hint == Hint::Increasing
                && self.partial_insertion_sort(a, b)
            {
                return;
            }
            if a > 0 && !self.less(a - 1, pivot) {
                a = self.partition_equal(a, b, pivot);
                continue;
            }
            let (mid, already) = self.partition(a, b, pivot);
            was_partitioned = already;
            let (left, right) = (mid - a, b - mid);
            let threshold = len / 8;
            if left < right {
                was_balanced = left >= threshold;
                self.pdqsort(a, mid, limit);
                a = mid + 1;
            } else {
                was_balanced = right >= threshold;
                self.pdqsort(mid + 1, b, limit);
                b = mid;
            }
        }
    }

    /// Partitions `[a, b)` around the element at `pivot`: its new index, and whether nothing
    /// had to move.
    fn partition(&mut self, a: usize, b: usize, pivot: usize) -> (usize, bool) {
        self.swap(a, pivot);
        // `i` and `j` bound the elements still to place, both inclusive; `j` may go below
        // `i` by one, never below `a`.
        let (mut i, mut j) = (a + 1, b - 1);
        while i <= j && self.less(i, a) {
            i += 1;
        }
        while i <= j && !self.less(j, a) {
            j -= 1;
        }
        if i > j {
            self.swap(j, a);
            return (j, true);
        }
        self.swap(i, j);
        i += 1;
        j -= 1;
        loop {
            while i <= j && self.less(i, a) {
                i += 1;
            }
            while i <= j && !self.less(j, a) {
                j -= 1;
            }
            if i > j {
                break;
            }
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
        self.swap(j, a);
        (j, false)
    }

    /// Moves the elements equal to the pivot first; the index after them.
    fn partition_equal(&mut self, a: usize, b: usize, pivot: usize) -> usize {
        self.swap(a, pivot);
        let (mut i, mut j) = (a + 1, b - 1);
        loop {
            while i <= j && !self.less(a, i) {
                i += 1;
            }
            while i <= j && self.less(a, j) {
                j -= 1;
            }
            if i > j {
                return i;
            }
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
    }

    /// Fixes a few out-of-order neighbours; whether `[a, b)` is then sorted.
    fn partial_insertion_sort(&mut self, a: usize, b: usize) -> bool {
        const MAX_STEPS: usize = 5;
        const SHORTEST_SHIFTING: usize = 50;
        let mut i = a + 1;
        for _ in 0..MAX_STEPS {
            while i < b && !self.less(i, i - 1) {
                i += 1;
            }
            if i == b {
                return true;
            }
            if b - a < SHORTEST_SHIFTING {
                return false;
            }
            self.swap(i, i - 1);
            if i - a >= 2 {
                let mut j = i - 1;
                while j >= 1 && self.less(j, j - 1) {
                    self.swap(j, j - 1);
                    j -= 1;
                }
            }
            if b - i >= 2 {
                let mut j = i + 1;
                while j < b && self.less(j, j - 1) {
                    self.swap(j, j - 1);
                    j += 1;
                }
            }
        }
        false
    }

    fn break_patterns(&mut self, a: usize, b: usize) {
        let len = b - a;
        if len < 8 {
            return;
        }
        let mut random = len as u64;
        let modulus = 1u64 << bit_len(len);
        let middle = a + (len / 4) * 2;
        for idx in middle - 1..=middle + 1 {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            let mut other = (random & (modulus - 1)) as usize;
            if other >= len {
                other -= len;
            }
            self.swap(idx, a + other);
        }
    }

    fn choose_pivot(&mut self, a: usize, b: usize) -> (usize, Hint) {
        const SHORTEST_NINTHER: usize = 50;
        const MAX_SWAPS: usize = 4 * 3;
        let len = b - a;
        let mut swaps = 0;
        let (mut i, mut j, mut k) = (a + len / 4, a + len / 4 * 2, a + len / 4 * 3);
        if len >= 8 {
            if len >= SHORTEST_NINTHER {
                i = self.median(i - 1, i, i + 1, &mut swaps);
                j = self.median(j - 1, j, j + 1, &mut swaps);
                k = self.median(k - 1, k, k + 1, &mut swaps);
            }
            j = self.median(i, j, k, &mut swaps);
        }
        let hint = match swaps {
            0 => Hint::Increasing,
            MAX_SWAPS => Hint::Decreasing,
            _ => Hint::Unknown,
        };
        (j, hint)
    }

    /// The index of the median of the elements at `a`, `b`, `c` (nothing moves).
    fn median(&mut self, a: usize, b: usize, c: usize, swaps: &mut usize) -> usize {
        let (a, b) = self.order2(a, b, swaps);
        let (b, c) = self.order2(b, c, swaps);
        let (_, b) = self.order2(a, b, swaps);
        let _ = c;
        b
    }

    fn order2(&mut self, a: usize, b: usize, swaps: &mut usize) -> (usize, usize) {
        if self.less(b, a) {
            *swaps += 1;
            (b, a)
        } else {
            (a, b)
        }
    }

    fn reverse(&mut self, a: usize, b: usize) {
        let (mut i, mut j) = (a, b - 1);
        while i < j {
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sorts `(key, tag)` pairs by key only and returns the tags: the order of equals shows
    /// the algorithm's path.
    fn tags(pairs: &[(u32, u32)]) -> Vec<u32> {
        let mut v = pairs.to_vec();
        sort_slice(&mut v, |x, y| x.0 < y.0);
        assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
        v.iter().map(|p| p.1).collect()
    }

    #[test]
    fn sorts_every_size_and_shape() {
        for n in 0..300u32 {
            let mut rising: Vec<u32> = (0..n).collect();
            let mut falling: Vec<u32> = (0..n).rev().collect();
            let mut mixed: Vec<u32> = (0..n).map(|i| (i * 7919 + 13) % (n / 3 + 1)).collect();
            for v in [&mut rising, &mut falling, &mut mixed] {
                let mut expected = v.clone();
                expected.sort_unstable();
                sort_slice(v, |a, b| a < b);
                assert_eq!(*v, expected, "n = {n}");
            }
        }
    }

    #[test]
    fn heapsort_fallback_sorts() {
        let mut s = Sorter {
            items: &mut [5, 3, 9, 1, 1, 8, 2, 7, 0, 6, 4][..],
            less: |a: &i32, b: &i32| a < b,
        };
        s.heap_sort(0, 11);
        assert_eq!(s.items, &[0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn short_runs_are_insertion_sorted_and_stay_stable() {
        assert_eq!(tags(&[(2, 0), (1, 1), (2, 2), (1, 3)]), [1, 3, 0, 2]);
    }

    /// The inputs of [`go_leaves_equal_elements_where_its_partitioning_puts_them`]: keys,
    /// each tagged with its index.
    fn inputs() -> Vec<Vec<u32>> {
        let dups = vec![5, 3, 11, 7, 7, 1, 13, 2, 9, 4, 12, 0, 10, 8];
        let many: Vec<u32> = (0..60).map(|i| (i * 37 + 11) % 9).collect();
        let falling: Vec<u32> = (0..100).map(|i| (100 - i) / 3).collect();
        let mut nearly: Vec<u32> = (0..80).map(|i| i / 2).collect();
        nearly.swap(10, 50);
        let pipes: Vec<u32> = (0..200)
            .map(|i| if i < 100 { i % 7 } else { (200 - i) % 5 })
            .collect();
        vec![dups, many, falling, nearly, pipes]
    }

    #[test]
    fn go_leaves_equal_elements_where_its_partitioning_puts_them() {
        // What Go 1.26's sort.Slice does with the same inputs (sorting the tagged keys by key
        // and printing the tags): a short run, many duplicates (ninther pivots, equal
        // partitions), a falling run (reversal), a nearly sorted run (partial insertion sort)
        // and organ pipes (pattern breaking).
        let go: [&[u32]; 5] = [
            &[11, 5, 7, 1, 9, 0, 3, 4, 13, 8, 12, 2, 10, 6],
            &[
                7, 25, 43, 16, 52, 34, 8, 44, 35, 26, 53, 17, 54, 9, 36, 0, 27, 45, 18, 1, 46, 19,
                10, 55, 37, 28, 38, 47, 56, 29, 20, 11, 2, 30, 21, 57, 3, 12, 48, 39, 40, 13, 4,
                22, 58, 31, 49, 5, 23, 14, 50, 32, 41, 59, 15, 6, 24, 51, 33, 42,
            ],
            &[
                99, 98, 97, 96, 95, 92, 94, 93, 90, 91, 89, 88, 87, 86, 85, 84, 83, 80, 82, 81, 78,
                79, 77, 76, 75, 74, 73, 72, 71, 68, 70, 69, 67, 66, 65, 62, 64, 63, 61, 60, 59, 58,
                57, 56, 53, 55, 54, 51, 50, 52, 49, 48, 47, 44, 46, 45, 42, 43, 41, 38, 40, 39, 37,
                36, 35, 34, 33, 32, 29, 31, 30, 26, 27, 28, 25, 24, 23, 22, 21, 20, 17, 19, 18, 14,
                15, 16, 11, 13, 12, 8, 10, 9, 7, 6, 5, 4, 3, 2, 0, 1,
            ],
            &[
                0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 50, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
                44, 45, 46, 47, 48, 49, 10, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64,
                65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79,
            ],
            &[
                35, 195, 190, 185, 180, 175, 170, 7, 165, 160, 155, 150, 145, 140, 14, 135, 130,
                125, 120, 115, 110, 21, 105, 100, 0, 98, 91, 84, 28, 77, 70, 63, 56, 49, 42, 99,
                71, 199, 1, 194, 189, 184, 179, 43, 174, 169, 8, 164, 159, 154, 50, 149, 144, 139,
                15, 134, 129, 57, 124, 119, 36, 114, 109, 22, 64, 104, 92, 85, 78, 29, 118, 65, 72,
                37, 198, 193, 2, 188, 183, 79, 178, 44, 173, 168, 30, 163, 86, 9, 158, 153, 51,
                148, 143, 93, 138, 133, 16, 128, 58, 123, 23, 113, 108, 103, 167, 94, 73, 107, 102,
                197, 38, 192, 112, 187, 3, 182, 80, 117, 177, 59, 172, 45, 122, 24, 162, 17, 87,
                127, 157, 10, 152, 31, 132, 147, 52, 66, 142, 137, 11, 32, 106, 141, 136, 74, 196,
                39, 146, 95, 111, 191, 131, 151, 101, 186, 53, 18, 156, 181, 88, 4, 126, 161, 25,
                67, 116, 46, 166, 60, 176, 121, 81, 171, 61, 89, 54, 5, 12, 75, 47, 82, 26, 40, 19,
                68, 96, 33, 34, 27, 69, 97, 76, 90, 48, 41, 83, 20, 55, 62, 6, 13,
            ],
        ];
        for (keys, expected) in inputs().iter().zip(go) {
            let pairs: Vec<(u32, u32)> = keys.iter().zip(0..).map(|(k, i)| (*k, i)).collect();
            assert_eq!(tags(&pairs), expected, "keys {keys:?}");
        }
    }
}
