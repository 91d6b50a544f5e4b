-- The name of a todo's uploaded file (the bytes stay a file under --data).
ALTER TABLE todos ADD COLUMN attachment TEXT;
