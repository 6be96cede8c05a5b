//! One way to spread work over the cores: `map` and `map_with`, results in input order.
//!
//! Own code rather than `rayon`: the three users (parsing files, projecting objects, judging
//! them against a per-thread copy of the index) need a scoped map over a slice and nothing else,
//! and a pool that lives beside the server's tokio threads would only sit idle there.
//!
//! Work is handed out in small chunks from a shared counter, so one large file or one slow share
//! does not leave the other cores waiting.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Chunks per worker: enough that the last ones even out, few enough that handing them out costs
/// nothing next to the work.
const CHUNKS_PER_WORKER: usize = 64;

/// How many workers `items` are worth when each should get at least `min_per_worker` of them:
/// at most one per core, at least one.
pub fn workers(items: usize, min_per_worker: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.min(items / min_per_worker.max(1)).max(1)
}

/// `items.iter().map(f).collect()`, on as many cores as `min_per_worker` allows.
pub fn map<T: Sync, R: Send>(
    items: &[T],
    min_per_worker: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let states = vec![(); workers(items.len(), min_per_worker)];
    map_with(items, states, |_, t| f(t))
}

/// As `map`, with one worker per element of `states`, each owning its state (a copy of an index,
/// a scratch buffer). Which worker maps which item is not fixed, so `f` must give the same result
/// whatever state it is handed. A panic in `f` is raised again here.
pub fn map_with<S: Send, T: Sync, R: Send>(
    items: &[T],
    mut states: Vec<S>,
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R> {
    if states.len() <= 1 || items.len() <= 1 {
        let Some(mut state) = states.pop() else {
            return Vec::new();
        };
        return items.iter().map(|t| f(&mut state, t)).collect();
    }
    let chunk = items
        .len()
        .div_ceil(states.len() * CHUNKS_PER_WORKER)
        .max(1);
    let next = AtomicUsize::new(0);
    let (next, f) = (&next, &f);
    let mut parts: Vec<(usize, Vec<R>)> = std::thread::scope(|s| {
        let handles: Vec<_> = states
            .into_iter()
            .map(|mut state| {
                s.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let c = next.fetch_add(1, Ordering::Relaxed);
                        let start = c.saturating_mul(chunk);
                        if start >= items.len() {
                            break;
                        }
                        let part = &items[start..items.len().min(start + chunk)];
                        done.push((c, part.iter().map(|t| f(&mut state, t)).collect()));
                    }
                    done
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    parts.sort_unstable_by_key(|(c, _)| *c);
    parts.into_iter().flat_map(|(_, part)| part).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_input_order() {
        let items: Vec<u32> = (0..10_007).collect();
        let doubled = map_with(&items, vec![0u32; 4], |seen, x| {
            *seen += 1;
            x * 2
        });
        assert_eq!(doubled, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        assert_eq!(map(&items[..1], 1, |x| *x), [0]);
        assert!(map(&items[..0], 1, |x| *x).is_empty());
    }

    #[test]
    fn one_worker_maps_on_the_calling_thread() {
        let here = std::thread::current().id();
        let ids = map(&[1, 2, 3], usize::MAX, |_| std::thread::current().id());
        assert!(ids.iter().all(|id| *id == here));
    }
}
