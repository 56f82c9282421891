// Thin C shim over libsqlite3 for what Swift cannot call or import:
// SQLITE_TRANSIENT (a cast macro) and variadic configuration calls.
#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H

#include <sqlite3.h>

/// SQLITE_TRANSIENT is `((sqlite3_destructor_type)-1)`: SQLite copies the bound bytes at once.
static inline sqlite3_destructor_type CSQLite_transient(void) { return SQLITE_TRANSIENT; }

/// sqlite3_db_config is variadic: turns double-quoted string literals off in DML and DDL.
static inline int CSQLite_db_config_no_dqs(sqlite3 *db) {
    int a = sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DML, 0, (int *)0);
    int b = sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DDL, 0, (int *)0);
    return a != SQLITE_OK ? a : b;
}

#endif
