# Sourced by scripts/apache and scripts/php-fpm (not run): what both PHP
# fronts share about the one page they serve, scripts/apache.d/zip.php.
#
#   php_page_prepare ME RUNDIR   ME names the caller in messages; RUNDIR is
#                                its state directory (secrets go under it)
#   php_page_env                 the page's environment, one NAME<TAB>VALUE
#                                a line, for SetEnv or FPM's env[]
#
# php_page_prepare sets docroot and the page's paths from the zipbench
# config ($conf: sqlite path, pg socket/port/user/database, the MariaDB
# socket, table names, the poolers' host and port); these variables, if
# set, override it: ZB_SQLITE_PATH ZB_SQLITE_TABLE ZB_PG_SOCKET ZB_PG_HOST
# ZB_PG_PORT ZB_PG_USER ZB_PG_DATABASE ZB_PG_TABLE ZB_MYSQL_SOCKET
# ZB_MYSQL_HOST ZB_MYSQL_PORT ZB_MYSQL_USER ZB_MYSQL_DATABASE
# ZB_INNODB_TABLE ZB_MYISAM_TABLE ZB_KEYS, and ZB_WRITES (the backends zip.php
# may write, comma-separated; none by default). A database is reached by its
# unix socket when the config names one, else by TCP at its host and port
# (as the C server does: the lab's config, whose databases are on
# another host, names no sockets). As root the
# page runs as www-data: it gets a copy of pgpass of its own (mode 0600,
# owned by www-data), and when www-data cannot reach the tree, a copy of
# the page, the SQLite file and the key file in a world-readable directory
# under /var/tmp. The MariaDB password is read from the config's
# password_file for the caller to hand over in a file only root reads.
# Expects $root, $build (absolute), $data and $conf; dies through the caller's die().

# The config's values the page needs, as every program reads them
# ($build/bin/zbconf: ${NAME:-DEFAULT} from the environment, defaults
# filled in): conf_value[BACKEND.KEY], set by php_page_prepare.
declare -A conf_value
read_conf() {
    local names=(sqlite.path sqlite.table pg.socket pg.host pg.port pg.user pg.database
                 pg.table pg.password_file pg_bouncer.host pg_bouncer.port pg_pool.host
                 pg_pool.port innodb.socket innodb.host innodb.port innodb.user
                 innodb.database innodb.table innodb.password_file myisam.table)
    local out i values
    out=$("$build/bin/zbconf" -c "$conf" "${names[@]}") ||
        die "cannot read $conf (with $build/bin/zbconf, which make all builds)"
    mapfile -t values <<< "$out"
    for i in "${!names[@]}"; do conf_value[${names[$i]}]=${values[$i]-}; done
}
# abs PATH: relative paths in the config are relative to the repository.
abs() { case $1 in /*|'') printf '%s' "$1" ;; *) printf '%s/%s' "$root" "$1" ;; esac; }

php_page_prepare() {
    local me=$1 rundir=$2 secrets
    read_conf
    docroot=$root/scripts/apache.d
    keys=$(abs "${ZB_KEYS:-$data/ken_all.keys}")
    sqlite=$(abs "${ZB_SQLITE_PATH:-${conf_value[sqlite.path]}}")
    pgsock=$(abs "${ZB_PG_SOCKET-${conf_value[pg.socket]}}")
    pghost=${ZB_PG_HOST:-${conf_value[pg.host]}}
    mysock=$(abs "${ZB_MYSQL_SOCKET-${conf_value[innodb.socket]}}")
    myhost=${ZB_MYSQL_HOST:-${conf_value[innodb.host]}}
    myport=${ZB_MYSQL_PORT:-${conf_value[innodb.port]}}
    pgpass=$(abs "${conf_value[pg.password_file]}")
    local mycreds
    mycreds=$(abs "${conf_value[innodb.password_file]}")
    mypw=""
    if [ -n "$mycreds" ] && [ -f "$mycreds" ]; then
        mypw=$(sed -n 's/^password *= *//p' "$mycreds" | head -1)
    fi
    [ "$(id -u)" = 0 ] || return 0
    secrets=$rundir/secrets
    # The page runs as www-data: it must reach the page, the SQLite file
    # and the sockets (scripts/db makes those world-accessible). A clone
    # under a private directory (say /root) is out of its reach: then it
    # serves a copy of the page, the SQLite file and the key file from a
    # world-readable directory, taken at this start (start again after
    # reloading the data), and reaches the sockets by their real paths
    # (scripts/db keeps its data under /var/tmp then).
    if ! runuser -u www-data -- test -r "$docroot/zip.php"; then
        local stage
        stage=/var/tmp/zipbench-www-$(printf '%s' "$rundir" | md5sum | cut -c1-8)
        rm -rf "$stage"
        mkdir -p "$stage"
        cp -r "$docroot" "$stage/www"
        docroot=$stage/www
        if [ -e "$sqlite" ] && ! runuser -u www-data -- test -r "$sqlite"; then
            cp "$sqlite" "$stage/zipbench.sqlite"
            sqlite=$stage/zipbench.sqlite
        fi
        if [ -e "$keys" ] && ! runuser -u www-data -- test -r "$keys"; then
            cp "$keys" "$stage/keys"
            keys=$stage/keys
        fi
        chmod -R a+rX "$stage"
        [ -z "$pgsock" ] || pgsock=$(readlink -f "$pgsock")
        [ -z "$mysock" ] || mysock=$(readlink -f "$mysock")
        secrets=$stage/secrets
        echo "$me: www-data cannot reach $root: serving a copy from $stage" >&2
    fi
    mkdir -p "$secrets"
    chown www-data: "$secrets"
    chmod 0700 "$secrets"
    if [ -f "$pgpass" ]; then
        install -m 0600 -o www-data -g www-data "$pgpass" "$secrets/pgpass"
        pgpass=$secrets/pgpass
    fi
    local f
    for f in "$docroot/zip.php" "$sqlite" "$pgsock" "$mysock" "$pgpass"; do
        if [ -e "$f" ] && ! runuser -u www-data -- test -r "$f"; then
            die "www-data (the PHP page's user) cannot read $f: every directory above it needs o+x (chmod o+x), the file o+r"
        fi
    done
}

# The poolers (scripts/pooler) are the page's pg targets pgbouncer and
# pgpool: their host and port from the config's pg_bouncer and pg_pool
# sections, which follow ZB_PGBOUNCER_PORT and ZB_PGPOOL_PORT.
php_page_env() {
    printf '%s\t%s\n' \
        ZB_SQLITE_PATH "$sqlite" \
        ZB_SQLITE_TABLE "${ZB_SQLITE_TABLE:-${conf_value[sqlite.table]}}" \
        ZB_PG_SOCKET "$pgsock" \
        ZB_PG_HOST "$pghost" \
        ZB_PG_PORT "${ZB_PG_PORT:-${conf_value[pg.port]}}" \
        ZB_PG_USER "${ZB_PG_USER:-${conf_value[pg.user]}}" \
        ZB_PG_DATABASE "${ZB_PG_DATABASE:-${conf_value[pg.database]}}" \
        ZB_PG_PASSFILE "$pgpass" \
        ZB_PG_TABLE "${ZB_PG_TABLE:-${conf_value[pg.table]}}" \
        ZB_PGBOUNCER_HOST "${conf_value[pg_bouncer.host]}" \
        ZB_PGBOUNCER_PORT "${conf_value[pg_bouncer.port]}" \
        ZB_PGPOOL_HOST "${conf_value[pg_pool.host]}" \
        ZB_PGPOOL_PORT "${conf_value[pg_pool.port]}" \
        ZB_MYSQL_SOCKET "$mysock" \
        ZB_MYSQL_HOST "$myhost" \
        ZB_MYSQL_PORT "$myport" \
        ZB_MYSQL_USER "${ZB_MYSQL_USER:-${conf_value[innodb.user]}}" \
        ZB_MYSQL_DATABASE "${ZB_MYSQL_DATABASE:-${conf_value[innodb.database]}}" \
        ZB_MYSQL_PASSWORD "$mypw" \
        ZB_INNODB_TABLE "${ZB_INNODB_TABLE:-${conf_value[innodb.table]}}" \
        ZB_MYISAM_TABLE "${ZB_MYISAM_TABLE:-${conf_value[myisam.table]}}" \
        ZB_KEYS "$keys" \
        ZB_WRITES "${ZB_WRITES:-}"
}
