//! CPython's `random` module, the parts the studies' reference scripts
//! use (`random.seed(int)`, then `random.sample` and `random.shuffle`),
//! so a study can draw what its reference draws: the MT19937 generator seeded
//! as `random.seed(int)` does (`init_by_array` of the integer's 32-bit
//! words), `getrandbits`, `_randbelow`, the two selection methods of
//! `random.sample` and `random.shuffle` (Python 3.11). The same seed and
//! population give the same sample and order as Python, element for element.

/// MT19937 as CPython's `_random.Random`.
pub struct PyRandom {
    mt: [u32; 624],
    index: usize,
}

impl PyRandom {
    /// `random.seed(seed)` for a non-negative integer seed.
    pub fn new(seed: u64) -> PyRandom {
        let mut r = PyRandom {
            mt: [0; 624],
            index: 624,
        };
        let key: Vec<u32> = if seed == 0 {
            vec![0]
        } else if seed >> 32 == 0 {
            vec![seed as u32]
        } else {
            vec![seed as u32, (seed >> 32) as u32]
        };
        r.init_by_array(&key);
        r
    }

    fn init_genrand(&mut self, s: u32) {
        self.mt[0] = s;
        for i in 1..624 {
            self.mt[i] = 1_812_433_253u32
                .wrapping_mul(self.mt[i - 1] ^ (self.mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        self.index = 624;
    }

    fn init_by_array(&mut self, key: &[u32]) {
        self.init_genrand(19_650_218);
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..624.max(key.len()) {
            self.mt[i] = (self.mt[i]
                ^ (self.mt[i - 1] ^ (self.mt[i - 1] >> 30)).wrapping_mul(1_664_525))
            .wrapping_add(key[j])
            .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= 624 {
                self.mt[0] = self.mt[623];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..623 {
            self.mt[i] = (self.mt[i]
                ^ (self.mt[i - 1] ^ (self.mt[i - 1] >> 30)).wrapping_mul(1_566_083_941))
            .wrapping_sub(i as u32);
            i += 1;
            if i >= 624 {
                self.mt[0] = self.mt[623];
                i = 1;
            }
        }
        self.mt[0] = 0x8000_0000;
    }

    /// `genrand_uint32`.
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= 624 {
            for k in 0..624 {
                let y = (self.mt[k] & 0x8000_0000) | (self.mt[(k + 1) % 624] & 0x7fff_ffff);
                self.mt[k] =
                    self.mt[(k + 397) % 624] ^ (y >> 1) ^ if y & 1 == 1 { 0x9908_b0df } else { 0 };
            }
            self.index = 0;
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `getrandbits(k)` for 1 <= k <= 32.
    fn getrandbits(&mut self, k: u32) -> u32 {
        self.next_u32() >> (32 - k)
    }

    /// `_randbelow_with_getrandbits(n)`, n >= 1 (below 2^32).
    fn randbelow(&mut self, n: usize) -> usize {
        let k = usize::BITS - n.leading_zeros();
        let mut r = self.getrandbits(k) as usize;
        while r >= n {
            r = self.getrandbits(k) as usize;
        }
        r
    }

    /// `random.sample(population, k)`: indices into the population, in
    /// Python's order. Panics when k > n (as Python raises).
    pub fn sample_indices(&mut self, n: usize, k: usize) -> Vec<usize> {
        assert!(k <= n, "sample larger than population");
        let mut setsize = 21usize;
        if k > 5 {
            // 4 ** _ceil(_log(k * 3, 4)); math.log(x, base) is log(x) / log(base).
            setsize += 4usize.pow((((k * 3) as f64).ln() / 4f64.ln()).ceil() as u32);
        }
        let mut result = Vec::with_capacity(k);
        if n <= setsize {
            let mut pool: Vec<usize> = (0..n).collect();
            for i in 0..k {
                let j = self.randbelow(n - i);
                result.push(pool[j]);
                pool[j] = pool[n - i - 1];
            }
        } else {
            let mut selected = std::collections::HashSet::new();
            for _ in 0..k {
                let mut j = self.randbelow(n);
                while selected.contains(&j) {
                    j = self.randbelow(n);
                }
                selected.insert(j);
                result.push(j);
            }
        }
        result
    }

    /// `random.shuffle(x)` (Python 3.11): for `i` from `len - 1` down to 1,
    /// swap `x[i]` with `x[_randbelow(i + 1)]`.
    pub fn shuffle<T>(&mut self, x: &mut [T]) {
        for i in (1..x.len()).rev() {
            let j = self.randbelow(i + 1);
            x.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outputs of CPython 3.11 (`random.seed(42)` etc.), computed there.
    #[test]
    fn matches_cpython() {
        let mut r = PyRandom::new(42);
        assert_eq!(
            [r.next_u32(), r.next_u32(), r.next_u32()],
            [2746317213, 478163327, 107420369]
        );
        assert_eq!(PyRandom::new(42).sample_indices(10, 4), [1, 0, 4, 9]);
        let mut r = PyRandom::new(42);
        let a = r.sample_indices(1000, 30);
        assert_eq!(
            a,
            [
                654, 114, 25, 759, 281, 250, 228, 142, 754, 104, 692, 758, 913, 558, 89, 604, 432,
                32, 30, 95, 223, 238, 517, 616, 27, 574, 203, 733, 665, 718
            ]
        );
        assert_eq!(
            r.sample_indices(700, 12),
            [558, 429, 225, 459, 603, 284, 6, 163, 432, 348, 159, 220],
            "the second sample continues the stream"
        );
        assert_eq!(PyRandom::new(7).sample_indices(5, 5), [2, 1, 3, 0, 4]);
    }

    /// `random.shuffle` as CPython 3.11 gives it: `random.seed(2333);
    /// x = list(range(10)); random.shuffle(x)`, and a shuffle after a sample
    /// continuing the stream (a reference's sample-then-shuffle), computed there.
    #[test]
    fn shuffle_matches_cpython() {
        let mut x: Vec<usize> = (0..10).collect();
        PyRandom::new(2333).shuffle(&mut x);
        assert_eq!(x, [3, 9, 1, 5, 7, 6, 8, 2, 4, 0]);
        let mut r = PyRandom::new(2333);
        assert_eq!(r.sample_indices(5, 3), [0, 2, 3]);
        let mut y: Vec<usize> = (0..7).collect();
        r.shuffle(&mut y);
        assert_eq!(y, [0, 3, 6, 2, 5, 4, 1]);
        let mut z: Vec<usize> = (0..5).collect();
        PyRandom::new(0).shuffle(&mut z);
        assert_eq!(z, [2, 1, 0, 4, 3]);
        let mut one = [7];
        PyRandom::new(1).shuffle(&mut one);
        assert_eq!(one, [7]);
    }
}
