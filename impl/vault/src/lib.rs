//! tc-vault: the Obsidian vault, its folder ACL and conventions, and the note tools.
