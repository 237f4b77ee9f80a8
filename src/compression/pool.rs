//! The process-wide pools of compression contexts, shared by every stream,
//! and how each kind of context is made.
//!
//! A context is taken for one message and given back after it, so streams
//! reuse contexts (no set-up per message) without one pinned per idle
//! stream: the pool holds at most as many contexts of a kind as were in use
//! at once, capped at [`MAX_IDLE`]. grpc-go pools its compressors the same
//! way.

use std::sync::Mutex;

#[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
use super::error::CodecError;

/// Idle contexts kept per pool; more given back at once are dropped.
const MAX_IDLE: usize = 16;

/// Messages above this size grow a zstd context's tables and window to the
/// message. (libdeflate's and zlib-rs's states do not grow.)
#[cfg(feature = "zstd")]
pub(super) const KEEP_CONTEXT_MAX: usize = 256 * 1024;

/// The most memory grown contexts (see [`Lease::keep_grown`]) may hold idle
/// in the whole process: a few contexts sized for large messages (a level-7
/// compressor for 256 KiB is about 6 MB). Keeping them matters: a dropped
/// context's window goes back to the system, and the next large message
/// faults it in again.
#[cfg(feature = "zstd")]
const GROWN_IDLE_MAX: usize = 32 << 20;

/// Bytes of grown contexts idle in all pools.
#[cfg(feature = "zstd")]
static GROWN_IDLE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Idle contexts of one kind, each tagged with the setting it was made for
/// (a compression level, say).
pub(super) struct Pool<T> {
    /// Each idle context with its setting and the grown bytes it counts in
    /// `GROWN_IDLE` (0 for one that did not grow).
    idle: Mutex<Vec<(i32, usize, T)>>,
}

impl<T> Pool<T> {
    pub(super) const fn new() -> Self {
        Self {
            idle: Mutex::new(Vec::new()),
        }
    }

    /// An idle context made for `setting`, or a new one from `make`.
    pub(super) fn take<E>(
        &self,
        setting: i32,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<Lease<'_, T>, E> {
        let context = match self.find(setting) {
            Some(context) => context,
            None => make()?,
        };
        Ok(self.lease(setting, context))
    }

    /// [`Pool::take`] for contexts whose making cannot fail.
    #[cfg(any(feature = "gzip", feature = "deflate"))]
    fn take_infallible(&self, setting: i32, make: impl FnOnce() -> T) -> Lease<'_, T> {
        let context = self.find(setting).unwrap_or_else(make);
        self.lease(setting, context)
    }

    /// Takes an idle context made for `setting` out of the idle list.
    fn find(&self, setting: i32) -> Option<T> {
        self.lock().and_then(|mut idle| {
            let index = idle.iter().rposition(|(tag, _, _)| *tag == setting)?;
            let (_, grown, context) = idle.swap_remove(index);
            release_grown(grown);
            Some(context)
        })
    }

    fn lease(&self, setting: i32, context: T) -> Lease<'_, T> {
        Lease {
            pool: self,
            setting,
            grown: 0,
            context: Some(context),
        }
    }

    /// How many contexts are idle in the pool.
    #[cfg(test)]
    pub(super) fn idle(&self) -> usize {
        self.lock().map_or(0, |idle| idle.len())
    }

    /// How many contexts made for `setting` are idle in the pool (for the
    /// context tests, which need every encoding).
    #[cfg(all(test, feature = "gzip", feature = "deflate", feature = "zstd"))]
    pub(super) fn idle_with(&self, setting: i32) -> usize {
        self.lock().map_or(0, |idle| {
            idle.iter().filter(|(tag, _, _)| *tag == setting).count()
        })
    }

    fn give(&self, setting: i32, grown: usize, context: T) {
        if let Some(mut idle) = self.lock()
            && idle.len() < MAX_IDLE
        {
            idle.push((setting, grown, context));
        } else {
            release_grown(grown);
        }
    }

    /// The idle list; `None` if a thread panicked holding it (the pool is
    /// then bypassed rather than trusted).
    fn lock(&self) -> Option<std::sync::MutexGuard<'_, Vec<(i32, usize, T)>>> {
        self.idle.lock().ok()
    }
}

/// A context taken from a [`Pool`]; given back when dropped unless
/// [`discard`](Lease::discard)ed.
pub(super) struct Lease<'a, T> {
    pool: &'a Pool<T>,
    setting: i32,
    /// Grown bytes reserved in `GROWN_IDLE` for when it is given back.
    grown: usize,
    context: Option<T>,
}

impl<T> Lease<'_, T> {
    /// Drops the context instead of giving it back: after an error.
    pub(super) fn discard(mut self) {
        self.context = None;
    }

    /// Gives back a context that grew to `size` bytes with a large message
    /// only while the grown contexts idle in the process stay within
    /// `GROWN_IDLE_MAX`; drops it otherwise.
    #[cfg(feature = "zstd")]
    pub(super) fn keep_grown(mut self, size: usize) {
        use std::sync::atomic::Ordering;
        let reserved = GROWN_IDLE.fetch_update(Ordering::AcqRel, Ordering::Acquire, |idle| {
            idle.checked_add(size)
                .filter(|&total| total <= GROWN_IDLE_MAX)
        });
        match reserved {
            Ok(_) => self.grown = size,
            Err(_) => self.context = None,
        }
    }
}

/// Gives `grown` bytes back to `GROWN_IDLE` when a grown context leaves the
/// idle list.
fn release_grown(grown: usize) {
    #[cfg(feature = "zstd")]
    if grown > 0 {
        GROWN_IDLE.fetch_sub(grown, std::sync::atomic::Ordering::AcqRel);
    }
    #[cfg(not(feature = "zstd"))]
    let _ = grown;
}

impl<T> std::ops::Deref for Lease<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // Present until `discard` or drop, which both consume the lease.
        self.context.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl<T> std::ops::DerefMut for Lease<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.context.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl<T> Drop for Lease<'_, T> {
    fn drop(&mut self) {
        if let Some(context) = self.context.take() {
            self.pool.give(self.setting, self.grown, context);
        }
    }
}

/// Idle gzip/deflate compressors, by level: each holds about 660 KB at
/// levels 2-9 (libdeflate's match finder and block buffers, allocated
/// through the Rust allocator).
#[cfg(any(feature = "gzip", feature = "deflate"))]
pub(super) static DEFLATERS: Pool<Deflater> = Pool::new();

/// A libdeflate compressor and the buffer a message in several chunks is
/// joined in (libdeflate compresses one contiguous buffer).
#[cfg(any(feature = "gzip", feature = "deflate"))]
pub(super) struct Deflater {
    pub(super) compressor: libdeflater::Compressor,
    pub(super) joined: Vec<u8>,
}

/// A pooled libdeflate compressor for `level` (0..=12).
#[cfg(any(feature = "gzip", feature = "deflate"))]
pub(super) fn deflater(level: i32) -> Result<Lease<'static, Deflater>, CodecError> {
    DEFLATERS.take(level, || {
        let level = libdeflater::CompressionLvl::new(level)
            .map_err(|_| CodecError::new(format!("invalid deflate level {level}")))?;
        Ok(Deflater {
            compressor: libdeflater::Compressor::new(level),
            joined: Vec::new(),
        })
    })
}

/// Idle zlib-rs compression states, by level and format (gzip or zlib).
#[cfg(any(feature = "gzip", feature = "deflate"))]
static ZLIB_COMPRESSORS: Pool<flate2::Compress> = Pool::new();

/// A pooled zlib-rs compression state for `level` (0..=9), writing gzip or
/// zlib; the caller resets it.
#[cfg(any(feature = "gzip", feature = "deflate"))]
pub(super) fn zlib_compressor(level: i32, gzip: bool) -> Lease<'static, flate2::Compress> {
    // The format's bit sits above every level.
    let setting = level | i32::from(gzip) << 8;
    ZLIB_COMPRESSORS.take_infallible(setting, || {
        let level = flate2::Compression::new(level.unsigned_abs());
        if gzip {
            flate2::Compress::new_gzip(level, 15)
        } else {
            flate2::Compress::new(level, true)
        }
    })
}

/// Idle inflate states (zlib-rs: about 40 KB of window and tables each),
/// for either format: a reset sets it.
#[cfg(any(feature = "gzip", feature = "deflate"))]
static INFLATERS: Pool<flate2::Decompress> = Pool::new();

/// A pooled zlib-rs inflate state; the caller resets it for its format.
#[cfg(any(feature = "gzip", feature = "deflate"))]
pub(super) fn inflater(zlib: bool) -> Lease<'static, flate2::Decompress> {
    INFLATERS.take_infallible(0, || flate2::Decompress::new(zlib))
}

/// Idle zstd compression contexts, by level.
#[cfg(feature = "zstd")]
pub(super) static ZSTD_COMPRESSORS: Pool<zstd::zstd_safe::CCtx<'static>> = Pool::new();

/// Idle zstd decompression contexts, by the window cap set on them.
#[cfg(feature = "zstd")]
pub(super) static ZSTD_DECOMPRESSORS: Pool<zstd::zstd_safe::DCtx<'static>> = Pool::new();

/// A zstd context (either direction) from `pool`, or a new one made with
/// `create`, each of `parameters` set on it with `set`.
#[cfg(feature = "zstd")]
pub(super) fn zstd_context<C, P>(
    pool: &'static Pool<C>,
    setting: i32,
    create: fn() -> Option<C>,
    set: fn(&mut C, P) -> zstd::zstd_safe::SafeResult,
    parameters: impl IntoIterator<Item = P>,
) -> Result<Lease<'static, C>, CodecError> {
    pool.take(setting, || {
        let mut ctx = create().ok_or_else(|| CodecError::new("cannot allocate a zstd context"))?;
        for parameter in parameters {
            set(&mut ctx, parameter).map_err(CodecError::zstd)?;
        }
        Ok(ctx)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn make(made: &mut usize) -> Result<usize, ()> {
        *made += 1;
        Ok(*made)
    }

    #[test]
    fn contexts_are_reused_per_setting_and_discarded_ones_are_not() {
        let pool = Pool::new();
        let mut made = 0;
        let first = *pool.take(6, || make(&mut made)).unwrap();
        assert_eq!(pool.idle(), 1, "given back on drop");
        assert_eq!(*pool.take(6, || make(&mut made)).unwrap(), first);
        assert_eq!(made, 1, "reused, not made again");
        // Another setting never gets a context made for a different one.
        assert_eq!(*pool.take(1, || make(&mut made)).unwrap(), 2);
        assert_eq!(pool.idle(), 2);
        pool.take(6, || make(&mut made)).unwrap().discard();
        assert_eq!(pool.idle(), 1, "a discarded context is dropped");
        assert_eq!(*pool.take(6, || make(&mut made)).unwrap(), 3);
    }

    #[test]
    fn the_pool_keeps_at_most_max_idle() {
        let pool = Pool::new();
        let mut made = 0;
        let leases: Vec<_> = (0..MAX_IDLE + 5)
            .map(|_| pool.take(0, || make(&mut made)).unwrap())
            .collect();
        assert_eq!(pool.idle(), 0, "all in use");
        drop(leases);
        assert_eq!(pool.idle(), MAX_IDLE);
    }

    #[test]
    fn a_failed_make_is_reported() {
        let pool: Pool<u8> = Pool::new();
        assert!(pool.take(0, || Err::<u8, _>("no memory")).is_err());
        assert_eq!(pool.idle(), 0);
    }

    /// The cap is process-wide and other tests hold grown contexts too, so
    /// this uses a context larger than the whole cap, and one small enough
    /// to fit beside anything the others keep.
    #[cfg(feature = "zstd")]
    #[test]
    fn grown_contexts_are_kept_only_within_the_cap() {
        let pool = Pool::new();
        let mut made = 0;
        pool.take(0, || make(&mut made))
            .unwrap()
            .keep_grown(GROWN_IDLE_MAX + 1);
        assert_eq!(pool.idle(), 0, "past the cap: dropped");
        pool.take(0, || make(&mut made)).unwrap().keep_grown(1);
        assert_eq!(pool.idle(), 1, "within the cap: kept");
        assert_eq!(*pool.take(0, || make(&mut made)).unwrap(), 2, "and reused");
    }
}
