package lrvga

import _ "github.com/geovb/geovb/backend/all"
