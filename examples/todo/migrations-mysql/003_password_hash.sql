-- Passwords are PHC strings from vela::crypto::password_hash ("$scrypt$ln=15,r=8,p=1$salt$hash"):
-- the salt and the cost live in the hash column. Accounts made before this (PBKDF2 in hex)
-- no longer sign in; register them again.
ALTER TABLE accounts DROP COLUMN salt;
