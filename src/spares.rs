//! A thread's few spare values of one kind, kept for the next call or
//! stream that needs one instead of being freed and allocated again.

use std::cell::RefCell;
use std::thread::LocalKey;

/// Up to `N` spares on a stack of fixed slots: keeping one never
/// allocates, and taking or keeping one is a bounds check and a move.
pub(crate) struct Spares<T, const N: usize> {
    slots: [Option<T>; N],
    len: usize,
}

impl<T, const N: usize> Spares<T, N> {
    /// No spares.
    pub(crate) const fn new() -> RefCell<Self> {
        RefCell::new(Spares {
            slots: [const { None }; N],
            len: 0,
        })
    }
}

/// Takes a spare from this thread's `spares`, if it has one (none while the
/// thread is being torn down).
pub(crate) fn take<T: 'static, const N: usize>(
    spares: &'static LocalKey<RefCell<Spares<T, N>>>,
) -> Option<T> {
    spares
        .try_with(|spares| {
            let mut spares = spares.borrow_mut();
            let top = spares.len.checked_sub(1)?;
            spares.len = top;
            spares.slots[top].take()
        })
        .ok()
        .flatten()
}

/// Keeps `spare` in this thread's `spares`, or drops it when they are full.
pub(crate) fn keep<T: 'static, const N: usize>(
    spares: &'static LocalKey<RefCell<Spares<T, N>>>,
    spare: T,
) {
    let refused = spares.try_with(|spares| {
        let mut spares = spares.borrow_mut();
        let len = spares.len;
        match spares.slots.get_mut(len) {
            Some(slot) => {
                *slot = Some(spare);
                spares.len = len + 1;
                None
            }
            None => Some(spare),
        }
    });
    // Dropped outside the borrow: a spare's drop may keep spares of its own.
    drop(refused);
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static TWO: RefCell<Spares<u32, 2>> = const { Spares::new() };
    }

    #[test]
    fn spares_are_taken_last_kept_first_and_the_surplus_is_dropped() {
        assert_eq!(take(&TWO), None);
        keep(&TWO, 1);
        keep(&TWO, 2);
        keep(&TWO, 3);
        assert_eq!(take(&TWO), Some(2));
        assert_eq!(take(&TWO), Some(1));
        assert_eq!(take(&TWO), None);
    }
}
