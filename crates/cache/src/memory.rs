//! The memory store: objects by key under a byte budget, evicted by a
//! [`Policy`]. Not synchronized; [`crate::Cache`] shards and locks it.

use crate::object::Object;
use crate::policy::{Eviction, Policy};
use std::collections::HashMap;
use std::sync::Arc;

pub struct MemStore {
    capacity: u64,
    objects: HashMap<u64, Arc<Object>>,
    policy: Box<dyn Eviction>,
}

impl MemStore {
    pub fn new(capacity: u64, policy: Policy) -> MemStore {
        MemStore {
            capacity,
            objects: HashMap::new(),
            policy: policy.build(capacity),
        }
    }

    /// The object stored for `url`, counting the use.
    pub fn get(&mut self, key: u64, url: &str) -> Option<Arc<Object>> {
        let o = self.objects.get(&key).filter(|o| o.url == url)?;
        self.policy.hit(key);
        Some(o.clone())
    }

    /// Stores `object` (replacing any for the same key), then evicts until
    /// the budget holds; returns how many objects were evicted. An object
    /// larger than the whole budget is not stored.
    pub fn insert(&mut self, object: Arc<Object>) -> usize {
        let key = object.key();
        let charge = object.charge();
        self.remove(key);
        if charge > self.capacity {
            return 0;
        }
        self.policy.insert(key, charge);
        self.objects.insert(key, object);
        let mut evicted = 0;
        while self.policy.bytes() > self.capacity {
            let Some(victim) = self.policy.evict() else {
                break;
            };
            self.objects.remove(&victim);
            evicted += 1;
        }
        evicted
    }

    pub fn remove(&mut self, key: u64) -> bool {
        self.policy.remove(key);
        self.objects.remove(&key).is_some()
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    pub fn bytes(&self) -> u64 {
        self.policy.bytes()
    }
}
