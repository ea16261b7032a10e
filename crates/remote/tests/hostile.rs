//! Remotes that do not behave: a server that streams past the size it
//! lists, keys that only look like object keys (Hardening II, M2 and L5).

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use object_store::memory::InMemory;
use object_store::path::Path as Key;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use ragprobe_artifact::Store;
use ragprobe_remote::{Backend, Remote, RemoteError, Transfer};
use std::sync::Arc;

mod common;
use common::*;

/// An in-memory remote whose listing gives every artifact half its size
/// and whose artifact downloads never end (the bytes, then zeros forever).
#[derive(Debug)]
struct Endless(InMemory);

impl std::fmt::Display for Endless {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Endless")
    }
}

#[async_trait]
impl ObjectStore for Endless {
    async fn put_opts(
        &self,
        location: &Key,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.0.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Key,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.0.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Key,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let real = self.0.get_opts(location, options).await?;
        if !location.as_ref().starts_with("objects/") {
            return Ok(real);
        }
        let meta = real.meta.clone();
        let range = real.range.clone();
        let attributes = real.attributes.clone();
        let head = real.into_stream();
        let zeros = futures::stream::repeat_with(|| Ok(Bytes::from(vec![0u8; 1 << 16])));
        Ok(GetResult {
            payload: GetResultPayload::Stream(head.chain(zeros).boxed()),
            meta,
            range,
            attributes,
        })
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Key>>,
    ) -> BoxStream<'static, object_store::Result<Key>> {
        self.0.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Key>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.0
            .list(prefix)
            .map(|m| {
                m.map(|mut m| {
                    if m.location.as_ref().starts_with("objects/") {
                        m.size /= 2;
                    }
                    m
                })
            })
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Key>) -> object_store::Result<ListResult> {
        self.0.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Key,
        to: &Key,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.0.copy_opts(from, to, options).await
    }
}

/// M2: a server listing N bytes and streaming on made `pull` write
/// gigabytes into `tmp/pull-<id>.part` and leave them; now the download
/// stops at the listed size, the part file is removed, the error names the
/// key.
#[test]
fn a_download_never_exceeds_the_listed_size() {
    let d = tempfile::tempdir().unwrap();
    let here = Store::open(d.path().join("here")).unwrap();
    let (_, ids) = lineage(&here, "x");
    let remote = Remote::with_store(
        "endless",
        "memory://",
        Arc::new(Endless(InMemory::new())),
        Backend::Memory,
    )
    .unwrap();
    let t = Transfer::default();
    remote.push(&here, &[ids[0].clone()], &t).unwrap();
    let there = Store::open(d.path().join("there")).unwrap();
    let e = remote.pull(&there, &[ids[0].clone()], &t).unwrap_err();
    assert!(matches!(e, RemoteError::Corrupt { .. }), "{e}");
    assert!(
        e.to_string().contains("more than") && e.to_string().contains(&ids[0]),
        "{e}"
    );
    assert_eq!(tmp_files(&there), 0, "no part file is left");
    assert!(!there.contains(&ids[0]));
}

/// L5: `objects/sub/<id>.parquet` was taken for object `<id>` (then a 404
/// and an empty part file left behind).
#[test]
fn a_nested_key_is_not_an_object() {
    let d = tempfile::tempdir().unwrap();
    let here = Store::open(d.path().join("here")).unwrap();
    let (_, ids) = lineage(&here, "x");
    let mem = Arc::new(InMemory::new());
    let remote = Remote::with_store("mem", "memory://", mem.clone(), Backend::Memory).unwrap();
    let bytes = std::fs::read(here.object_path(&ids[0])).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(mem.put(
        &Key::from(format!("objects/sub/{}.parquet", ids[0])),
        PutPayload::from(bytes),
    ))
    .unwrap();
    assert!(remote.listing().unwrap().objects.is_empty());
    let there = Store::open(d.path().join("there")).unwrap();
    let e = remote
        .pull(&there, &[ids[0].clone()], &Transfer::default())
        .unwrap_err();
    assert!(e.to_string().contains("not in the remote"), "{e}");
    assert_eq!(tmp_files(&there), 0);
}
