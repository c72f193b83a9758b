//! The fan-out model: workload, agents, launch strategies, latency, rate limits. The only
//! module that knows both the engine and the cache.

pub mod latency;
