#!/usr/bin/env sysbench
-- The server's lookup by sysbench's own MySQL client: the native reference
-- of zipbench's MariaDB figures (bench/experiments/server.mjs). Each thread
-- opens its connection, sets the server's session sql_mode (ANSI_QUOTES:
-- the same statement text), prepares the lookup once (binary protocol)
-- and runs it with a key drawn uniformly from --keys, as loadgen draws
-- them, for --time seconds (sysbench.rand.default is --rand-type's
-- "special" unless told: 75% of the draws on 1% of the keys):
--   sysbench bench/sysbench/lookup.lua --db-driver=mysql --mysql-socket=...
--     --mysql-user=zipbench --mysql-password=... --mysql-db=zipbench
--     --table=bench_lookup_innodb --keys=build/ken_all.keys
--     --threads=10 --time=2 run
-- SELECT * is the table's 15 columns in the order the server names them;
-- the COLLATE clause is the server's exact match on a text key.

sysbench.cmdline.options = {
   table = {"The postal table to look up", "bench_lookup_innodb"},
   keys = {"A file of the table's keys, one per line", ""},
}

local keys

function thread_init()
   keys = {}
   local f = assert(io.open(sysbench.opt.keys, "r"), "--keys: cannot open " .. sysbench.opt.keys)
   for line in f:lines() do
      if #line > 0 then keys[#keys + 1] = line end
   end
   f:close()
   assert(#keys > 0, "--keys: no keys in " .. sysbench.opt.keys)
   drv = sysbench.sql.driver()
   con = drv:connect()
   con:query("SET SESSION sql_mode = 'STRICT_ALL_TABLES,ANSI_QUOTES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'")
   stmt = con:prepare("SELECT * FROM " .. sysbench.opt.table ..
                      " WHERE \"zip_code\" = ? COLLATE utf8mb4_nopad_bin")
   param = stmt:bind_create(sysbench.sql.type.VARCHAR, 255)
   stmt:bind_param(param)
end

function event()
   param:set(keys[sysbench.rand.uniform(1, #keys)])
   stmt:execute()
end

function thread_done()
   stmt:close()
   con:disconnect()
end
