//! The slabs the index keeps its objects in: values in reusable slots named by `u32` ids, and
//! the pair of them (stored, pending) that shares one id space.

/// The top bit of a slot id names a pending version: the secondary indexes (segments, holders,
/// claims, pools) name stored and pending entries alike with one `u32`.
pub(super) const PENDING_BIT: u32 = 1 << 31;

/// Stored objects and pending versions in one id space (`PENDING_BIT`).
#[derive(Debug, Clone)]
pub(super) struct Slots<T> {
    pub(super) stored: Slab<T>,
    pub(super) pending: Slab<T>,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots {
            stored: Slab::default(),
            pending: Slab::default(),
        }
    }
}

impl<T> Slots<T> {
    pub(super) fn insert(&mut self, value: T, pending: bool) -> u32 {
        if pending {
            self.pending.insert(value) | PENDING_BIT
        } else {
            let id = self.stored.insert(value);
            assert!(id & PENDING_BIT == 0, "more than 2 billion objects");
            id
        }
    }

    pub(super) fn remove(&mut self, id: u32) -> T {
        if id & PENDING_BIT != 0 {
            self.pending.remove(id & !PENDING_BIT)
        } else {
            self.stored.remove(id)
        }
    }

    pub(super) fn get(&self, id: u32) -> &T {
        if id & PENDING_BIT != 0 {
            self.pending.get(id & !PENDING_BIT)
        } else {
            self.stored.get(id)
        }
    }

    pub(super) fn get_mut(&mut self, id: u32) -> &mut T {
        if id & PENDING_BIT != 0 {
            self.pending.get_mut(id & !PENDING_BIT)
        } else {
            self.stored.get_mut(id)
        }
    }

    /// Every id in use, stored first.
    pub(super) fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        let stored = self.stored.iter().map(|(id, _)| id);
        let pending = self.pending.iter().map(|(id, _)| id | PENDING_BIT);
        stored.chain(pending)
    }
}

/// Values in reusable slots named by `u32` ids (ids are reused after removal).
#[derive(Debug, Clone)]
pub(super) struct Slab<T> {
    pub(super) slots: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slab<T> {
    pub(super) fn insert(&mut self, value: T) -> u32 {
        match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = Some(value);
                id
            }
            None => {
                let id = u32::try_from(self.slots.len()).expect("more than 4 billion objects");
                self.slots.push(Some(value));
                id
            }
        }
    }

    pub(super) fn remove(&mut self, id: u32) -> T {
        let value = self.slots[id as usize].take().expect("slab id in use");
        self.free.push(id);
        value
    }

    pub(super) fn get(&self, id: u32) -> &T {
        self.slots[id as usize].as_ref().expect("slab id in use")
    }

    pub(super) fn get_mut(&mut self, id: u32) -> &mut T {
        self.slots[id as usize].as_mut().expect("slab id in use")
    }

    pub(super) fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, &T)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.as_ref().map(|v| (i as u32, v)))
    }
}
