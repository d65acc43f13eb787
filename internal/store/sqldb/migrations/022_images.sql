-- The images the image sweep knows (issue 30, docs/hosting.md "Images"):
-- digest is an image's manifest digest (sha256:<hex>); referenced_at, unix
-- micros, is the last time a sweep saw something refer to it (a project's
-- published revision, an open job or attempt, a warm pool), or when it was
-- first found or published. An image unreferenced for --image-retention is
-- deleted from the blob store and the controllers' disks, then its row.
CREATE TABLE images (
    digest        TEXT PRIMARY KEY CHECK (digest <> ''),
    referenced_at BIGINT NOT NULL
);
