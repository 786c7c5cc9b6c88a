// psuite report page: draws the view embedded in #psuite-view (see psuite/psprocess/html/__init__.py)
"use strict";
