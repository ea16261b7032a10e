//! What the data tests share.

use ragprobe_data::test_server::TestServer;
use ragprobe_data::DataOptions;
use std::path::Path;

/// Options that fetch from `server` (the hub and, as the mirror, every
/// other URL) into `dir`, without progress bars.
pub fn options(server: &TestServer, dir: &Path) -> DataOptions {
    DataOptions {
        hub_endpoint: server.url(),
        hub_token: None,
        hub_cache: dir.join("hub"),
        offline: false,
        mirror: Some(server.url()),
        data_dir: dir.join("data"),
        only: Vec::new(),
        retries: 3,
        progress: false,
    }
}
